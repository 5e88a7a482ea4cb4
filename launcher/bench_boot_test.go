package launcher_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// bootPaths are the boots BenchmarkBootPaths times: the kernel-boot guest
// beside each bootable image under each firmware, one after the other
// (the hybrid image but for secure boot, sb-virtio-disk); the kernel-boot
// guest comes first, as the ratios to it are taken per iteration.
var bootPaths = []struct {
	name string
	spec string // "" for the kernel-boot guest
}{
	{name: "kernel"},
	{name: "bios-virtio-disk", spec: bootPathSpec("", "disk", "virtio", "HYBRID")},
	{name: "bios-sata-cdrom", spec: bootPathSpec("", "cdrom", "sata", "HYBRID")},
	{name: "efi-sata-disk", spec: bootPathSpec("    firmware:\n      bootloader:\n        efi: {secureBoot: false}\n", "disk", "sata", "HYBRID")},
	{name: "sb-virtio-disk", spec: bootPathSpec("    features:\n      smm: {enabled: true}\n    firmware:\n      bootloader:\n        efi: {secureBoot: true}\n", "disk", "virtio", "SECUREBOOT")},
}

// bootPathSpec is a VMI spec booting image from one drive (disk or cdrom)
// on bus, with the domain lines firmware (indented 4).
func bootPathSpec(firmware, drive, bus, image string) string {
	return fmt.Sprintf("  domain:\n    memory: {guest: 512Mi}\n%s    devices:\n      disks:\n      - name: boot\n        %s: {bus: %s}\n  volumes:\n  - name: boot\n    containerDisk: {image: %s}\n",
		firmware, drive, bus, image)
}

// BenchmarkBootPaths measures, for each of bootPaths under emulation, the
// time from Sync until the guest's report is complete on its serial
// console (firmware, GRUB, kernel, the initramfs's modules and report).
// Each iteration boots every path once, one after the other, so that all
// see the same load of the machine; it reports each path's median as
// s-median/PATH, and the median of its ratio to the kernel-boot guest's
// time in the same iteration as x-kernel/PATH. Delete is not timed.
//
//	go test ./launcher -run '^$' -bench BootPaths -benchtime 5x -timeout 60m
func BenchmarkBootPaths(b *testing.B) {
	e := newEnv(b)
	needBootImages(b)
	ctx := context.Background()
	times := map[string][]float64{}
	ratios := map[string][]float64{}
	for i := range b.N {
		var kernel float64
		for _, p := range bootPaths {
			name := uniqueName(fmt.Sprintf("b-%s-%d", p.name, i))
			vmi := guestVMI(b, name, 0, testguest.ActionPowerOff)
			if p.spec != "" {
				vmi = bootVMI(b, name, p.spec)
			}
			start := time.Now()
			if err := e.l.Sync(ctx, vmi); err != nil {
				b.Fatalf("Sync: %v", err)
			}
			for !strings.Contains(e.serialLog(vmi), testguest.EndMarker) {
				if time.Since(start) > bootImageTimeout {
					b.Fatalf("%s: no report within %s:\n%s", name, bootImageTimeout, e.serialLog(vmi))
				}
				time.Sleep(100 * time.Millisecond)
			}
			took := time.Since(start).Seconds()
			times[p.name] = append(times[p.name], took)
			if p.spec == "" {
				kernel = took
			} else {
				ratios[p.name] = append(ratios[p.name], took/kernel)
			}
			b.StopTimer()
			if err := e.l.Delete(ctx, vmi); err != nil {
				b.Fatalf("Delete: %v", err)
			}
			b.StartTimer()
		}
	}
	for _, p := range bootPaths {
		b.ReportMetric(median(times[p.name]), "s-median/"+p.name)
		if p.spec != "" {
			b.ReportMetric(median(ratios[p.name]), "x-kernel/"+p.name)
		}
		b.Logf("%s: boots %.1f s", p.name, times[p.name])
	}
}

// median returns the median of xs (the upper one of an even count).
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
