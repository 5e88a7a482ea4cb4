package launcher_test

// End-to-end tests of live changes (live.go) on the real libvirtd: the
// test guest's console shell is asked what it sees after each Sync.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// liveNetwork is the multus network of the hot-plugged NIC: user-mode
// networking, like the pod network here.
const liveNetwork = "live-second"

// liveEnv is newEnv with liveNetwork mapped; owner is set to the
// launcher's owner.
func liveEnv(t testing.TB, owner *string, stateDir string) *env {
	return newEnvWith(t, func(cfg *launcher.Config) {
		cfg.Layout.Networks = map[string]convert.InterfaceAttachment{liveNetwork: {Type: "user"}}
		if testing.Verbose() {
			cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
		}
		if *owner != "" {
			cfg.Owner, cfg.Layout.StateDir = *owner, stateDir
		}
		*owner = cfg.Owner
	})
}

// liveVMI is a test guest VMI with one socket of four, that starts paused
// and waits with a shell on its console.
func liveVMI(t testing.TB, base string) *v1.VirtualMachineInstance {
	return decodeVMI(t, fmt.Sprintf(vmiYAML, uniqueName(base), 5, "  startStrategy: Paused\n", testguest.ActionACPI,
		"    cpu: {sockets: 1, cores: 1, threads: 1, maxSockets: 4}\n    memory:\n      guest: 128Mi\n",
		"      interfaces:\n      - {name: default, masquerade: {}}", "  networks:\n  - {name: default, pod: {}}\n"))
}

// bootLive starts a liveVMI on a liveEnv of its own and waits for its
// shell; owner is set to the environment's owner, for a launcher after it.
func bootLive(t testing.TB, owner *string, base string) (*env, *v1.VirtualMachineInstance, *guestShell) {
	t.Helper()
	e := liveEnv(t, owner, "")
	vmi := liveVMI(t, base)
	e.sync(t, vmi)
	return e, vmi, bootShell(t, e, vmi)
}

// The guest's views of its NICs and CPUs (testguest.ListDisksCommand lists
// its disks).
const (
	listNICs  = `for n in /sys/class/net/e*; do ip link set ${n##*/} up; done; sleep 1; for n in /sys/class/net/e*; do echo "nic ${n##*/} mac=$(cat $n/address) carrier=$(cat $n/carrier)"; done`
	onlineCPU = `for c in /sys/devices/system/cpu/cpu[1-9]*; do echo 1 > $c/online; done 2>/dev/null; echo "cpus $(grep -c ^processor /proc/cpuinfo)"`
)

// withDisk returns v with an emptyDisk on bus, its serial its name.
func withDisk(v *v1.VirtualMachineInstance, name string, bus v1.DiskBus, size string) *v1.VirtualMachineInstance {
	v = v.DeepCopy()
	v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, v1.Disk{Name: name, Serial: name,
		DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: bus}}})
	v.Spec.Volumes = append(v.Spec.Volumes, v1.Volume{Name: name,
		VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{Capacity: resource.MustParse(size)}}})
	return v
}

// withoutDisk returns v without the disk and volume called name.
func withoutDisk(v *v1.VirtualMachineInstance, name string) *v1.VirtualMachineInstance {
	v = v.DeepCopy()
	var disks []v1.Disk
	for _, d := range v.Spec.Domain.Devices.Disks {
		if d.Name != name {
			disks = append(disks, d)
		}
	}
	var vols []v1.Volume
	for _, vol := range v.Spec.Volumes {
		if vol.Name != name {
			vols = append(vols, vol)
		}
	}
	v.Spec.Domain.Devices.Disks, v.Spec.Volumes = disks, vols
	return v
}

// TestE2ELiveChanges changes a running test guest's VMI through Sync, and
// asks the guest after each change: a virtio disk and a SCSI disk
// hot-added are listed with their serials and sizes (and Ready in
// status.volumeStatus); one removed is gone, and a restarted launcher does
// not bring it back; a launcher that died between an attach and the marks
// leaves the next one nothing to attach twice; a second NIC hot-added shows its MAC; its link set
// down, no carrier; vCPUs 1 → 3 are onlined by the guest
// (status.currentCPUTopology); changes that need a restart are refused
// with their field paths, and the guest is untouched.
func TestE2ELiveChanges(t *testing.T) {
	var owner string
	e, vmi, g := bootLive(t, &owner, "e2e-live")
	ctx := context.Background()
	if out := g.ask(onlineCPU); !strings.Contains(out, "cpus 1") {
		t.Fatalf("before: %s", out)
	}

	// Disks: virtio and SCSI, hot-added.
	spec := withDisk(withDisk(vmi, "hotvirtio", v1.DiskBusVirtio, "64Mi"), "hotscsi", v1.DiskBusSCSI, "32Mi")
	began := time.Now()
	if err := e.l.Sync(ctx, spec); err != nil {
		t.Fatalf("Sync with two disks more: %v", err)
	}
	synced := time.Since(began)
	out, seen := g.until(testguest.ListDisksCommand, time.Minute, func(s string) bool {
		return testguest.HasDisk(s, "hotvirtio", 64<<20) && testguest.HasDisk(s, "hotscsi", 32<<20)
	})
	t.Logf("two disks hot-added: Sync took %s, the guest listed them %s later:\n%s", synced, seen, out)
	st, err := e.l.Status(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	ready := 0
	for _, vs := range st.VolumeStatus {
		if (vs.Name == "hotvirtio" || vs.Name == "hotscsi") && vs.Phase == v1.VolumeReady && vs.HotplugVolume != nil && vs.Target != "" {
			ready++
		}
	}
	if ready != 2 {
		t.Errorf("volumeStatus %+v, want hotvirtio and hotscsi Ready with hotplugVolume", st.VolumeStatus)
	}
	if err := e.l.Sync(ctx, spec); err != nil {
		t.Fatalf("Sync again: %v", err)
	}

	// One removed: gone, and a restarted launcher leaves it gone.
	spec = withoutDisk(spec, "hotvirtio")
	if err := e.l.Sync(ctx, spec); err != nil {
		t.Fatalf("Sync without the virtio disk: %v", err)
	}
	g.until(testguest.ListDisksCommand, time.Minute, func(s string) bool {
		return !strings.Contains(s, "serial=hotvirtio") && testguest.HasDisk(s, "hotscsi", 32<<20)
	})
	again := liveEnv(t, &owner, e.layout.StateDir)
	plans := launcher.Plans(again.l)
	if err := again.l.Sync(ctx, spec); err != nil {
		t.Fatalf("Sync by a new launcher: %v", err)
	}
	if launcher.Plans(again.l) != plans+1 {
		t.Errorf("the new launcher made %d plans", launcher.Plans(again.l)-plans)
	}
	time.Sleep(2 * time.Second)
	if out := g.ask(testguest.ListDisksCommand); strings.Contains(out, "serial=hotvirtio") || !testguest.HasDisk(out, "hotscsi", 32<<20) {
		t.Errorf("after a new launcher's Sync the guest lists:\n%s", out)
	}
	dom, err := e.conn.LookupDomainByName(domainName(vmi))
	if err != nil {
		t.Fatal(err)
	}
	defer dom.Free()
	for _, flags := range []libvirt.DomainXMLFlags{0, libvirt.DOMAIN_XML_INACTIVE} {
		x, err := dom.GetXMLDesc(flags)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(x, "ua-hotvirtio") || !strings.Contains(x, "ua-hotscsi") {
			t.Errorf("definition (flags %d) after the detach: ua-hotvirtio %v, ua-hotscsi %v", flags,
				strings.Contains(x, "ua-hotvirtio"), strings.Contains(x, "ua-hotscsi"))
		}
	}

	// A launcher that dies between an attach and the marks: the next Sync
	// finds the disk there, attaches nothing twice and records it; Syncs
	// after it write nothing.
	raw, err := dom.GetMetadata(libvirt.DOMAIN_METADATA_ELEMENT, hostplan.MetadataNS, libvirt.DOMAIN_AFFECT_LIVE)
	if err != nil {
		t.Fatal(err)
	}
	m, err := hostplan.ParseMarks(raw)
	if err != nil || m == nil {
		t.Fatalf("marks %q: %v", raw, err)
	}
	marks, err := m.Element()
	if err != nil {
		t.Fatal(err)
	}
	spec = withDisk(spec, "hotagain", v1.DiskBusVirtio, "16Mi")
	if err := e.l.Sync(ctx, spec); err != nil {
		t.Fatalf("Sync with hotagain: %v", err)
	}
	if err := dom.SetMetadata(libvirt.DOMAIN_METADATA_ELEMENT, marks, hostplan.MetadataPrefix, hostplan.MetadataNS,
		libvirt.DOMAIN_AFFECT_LIVE|libvirt.DOMAIN_AFFECT_CONFIG); err != nil {
		t.Fatal(err)
	}
	if live, err := again.l.LiveChanges(ctx, spec); err != nil || live == nil || len(live.Ops) != 0 || !live.Applicable() {
		t.Fatalf("live changes with the disk attached, not recorded: %+v (%v)", live, err)
	}
	if err := again.l.Sync(ctx, spec); err != nil {
		t.Fatalf("Sync after the lost marks: %v", err)
	}
	out, _ = g.until(testguest.ListDisksCommand, time.Minute, func(s string) bool { return testguest.HasDisk(s, "hotagain", 16<<20) })
	if n := strings.Count(out, "serial=hotagain"); n != 1 {
		t.Errorf("the guest lists hotagain %d times:\n%s", n, out)
	}
	if st, err := again.l.Status(ctx, spec); err != nil || !slices.ContainsFunc(st.VolumeStatus, func(vs v1.VolumeStatus) bool {
		return vs.Name == "hotagain" && vs.Phase == v1.VolumeReady
	}) {
		t.Errorf("after the lost marks: volumeStatus %+v (%v)", st.VolumeStatus, err)
	}
	time.Sleep(time.Second) // the events of the marks' write have arrived
	plans = launcher.Plans(again.l)
	for range 3 {
		if err := again.l.Sync(ctx, spec); err != nil {
			t.Fatal(err)
		}
	}
	if n := launcher.Plans(again.l) - plans; n > 1 {
		t.Errorf("3 Syncs of the changed VMI, as it runs now, made %d plans, want at most 1", n)
	}

	// A second NIC, then its link down.
	const mac = "02:00:00:00:24:02"
	spec = spec.DeepCopy()
	spec.Spec.Domain.Devices.Interfaces = append(spec.Spec.Domain.Devices.Interfaces, v1.Interface{Name: "second", MacAddress: mac,
		InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}})
	spec.Spec.Networks = append(spec.Spec.Networks, v1.Network{Name: "second",
		NetworkSource: v1.NetworkSource{Multus: &v1.MultusNetwork{NetworkName: liveNetwork}}})
	if err := e.l.Sync(ctx, spec); err != nil {
		t.Fatalf("Sync with a second NIC: %v", err)
	}
	nicLine := regexp.MustCompile(`nic (\S+) mac=` + mac + ` carrier=(\d)`)
	out, _ = g.until(listNICs, time.Minute, func(s string) bool { return nicLine.MatchString(s) })
	if m := nicLine.FindStringSubmatch(out); m[2] != "1" {
		t.Errorf("the hot-added NIC has no carrier:\n%s", out)
	}
	spec = spec.DeepCopy()
	spec.Spec.Domain.Devices.Interfaces[1].State = v1.InterfaceStateLinkDown
	if err := e.l.Sync(ctx, spec); err != nil {
		t.Fatalf("Sync with the link down: %v", err)
	}
	g.until(listNICs, 30*time.Second, func(s string) bool {
		m := nicLine.FindStringSubmatch(s)
		return m != nil && m[2] == "0"
	})

	// vCPUs 1 → 3.
	spec = spec.DeepCopy()
	spec.Spec.Domain.CPU.Sockets = 3
	if err := e.l.Sync(ctx, spec); err != nil {
		t.Fatalf("Sync with 3 sockets: %v", err)
	}
	g.until(onlineCPU, time.Minute, func(s string) bool { return strings.Contains(s, "cpus 3") })
	if st, err := e.l.Status(ctx, spec); err != nil || st.CurrentCPUTopology == nil || st.CurrentCPUTopology.Sockets != 3 {
		t.Errorf("currentCPUTopology %+v (%v), want 3 sockets", st.CurrentCPUTopology, err)
	}

	// Changes a running domain cannot follow: refused, nothing changed.
	before, err := dom.GetXMLDesc(0)
	if err != nil {
		t.Fatal(err)
	}
	bad := withDisk(spec, "hotvirtio2", v1.DiskBusVirtio, "16Mi")
	bad.Spec.Domain.CPU.MaxSockets = 8
	mem := resource.MustParse("256Mi")
	bad.Spec.Domain.Memory.Guest = &mem
	err = e.l.Sync(ctx, bad)
	var rr *launcher.RestartRequiredError
	if !errors.Is(err, launcher.ErrRestartRequired) || !errors.As(err, &rr) {
		t.Fatalf("Sync of changes that need a restart: %v, want a RestartRequiredError", err)
	}
	t.Logf("refused: %v", err)
	for _, p := range []string{"spec.domain.cpu.maxSockets", "spec.domain.memory.guest"} {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("the refusal does not name %s: %v", p, err)
		}
	}
	if len(rr.Live) != 1 || rr.Live[0].Name != "hotvirtio2" {
		t.Errorf("the live changes not made: %v", rr.Live)
	}
	after, err := dom.GetXMLDesc(0)
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("a refused change changed the domain")
	}
	if out := g.ask(testguest.ListDisksCommand + "; " + onlineCPU); strings.Contains(out, "hotvirtio2") || !strings.Contains(out, "cpus 3") {
		t.Errorf("after the refusal the guest has:\n%s", out)
	}
}

// BenchmarkSyncHotplugDisk measures the time from a Sync that adds a
// virtio disk to a running test guest until the guest lists it with its
// serial (one guest boots before the timer; each iteration adds one disk,
// its serial the iteration's). Reported as s-sync (the Sync alone) and
// s-seen (Sync to the guest's listing) per op.
//
//	go test ./launcher -run '^$' -bench SyncHotplugDisk -benchtime 3x
//
// (KubeVirt's spare root ports leave room for 4 virtio disks on the test
// guest: more iterations than that fail with libvirt's "No more available
// PCI slots".)
func BenchmarkSyncHotplugDisk(b *testing.B) {
	var owner string
	e, vmi, g := bootLive(b, &owner, "b-hotplug")
	ctx := context.Background()
	var syncs, seen time.Duration
	b.ResetTimer()
	for i := range b.N {
		serial := fmt.Sprintf("bench%d", i)
		vmi = withDisk(vmi, serial, v1.DiskBusVirtio, "16Mi")
		began := time.Now()
		if err := e.l.Sync(ctx, vmi); err != nil {
			b.Fatalf("Sync: %v", err)
		}
		syncs += time.Since(began)
		g.until(testguest.ListDisksCommand, time.Minute, func(s string) bool { return testguest.HasDisk(s, serial, 16<<20) })
		seen += time.Since(began)
	}
	b.StopTimer()
	b.ReportMetric(syncs.Seconds()/float64(b.N), "s-sync/op")
	b.ReportMetric(seen.Seconds()/float64(b.N), "s-seen/op")
}
