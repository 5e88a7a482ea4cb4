package launcher_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmi2libvirt/vmi2libvirt/internal/testguest"
)

// bootPaths are the boots BenchmarkBootPaths times: the kernel-boot guest
// beside each bootable image under each firmware, one after the other
// (the hybrid image but for secure boot, sb-virtio-disk).
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
// console (firmware, GRUB, kernel, the initramfs's modules and report),
// and reports the median as s-median/boot. Delete is not timed.
//
//	go test ./launcher -run '^$' -bench BootPaths -benchtime 5x -timeout 60m
func BenchmarkBootPaths(b *testing.B) {
	e := newEnv(b)
	needBootImages(b)
	for _, p := range bootPaths {
		b.Run(p.name, func(b *testing.B) {
			ctx := context.Background()
			var times []float64
			for i := range b.N {
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
				times = append(times, time.Since(start).Seconds())
				b.StopTimer()
				if err := e.l.Delete(ctx, vmi); err != nil {
					b.Fatalf("Delete: %v", err)
				}
				b.StartTimer()
			}
			slices.Sort(times)
			b.ReportMetric(times[len(times)/2], "s-median/boot")
			b.Logf("%s: boots %v s", p.name, times)
		})
	}
}
