package launcher_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// bootTimeout bounds a guest's boot under emulation with other guests
// booting beside it on two cores.
const bootTimeout = 90 * time.Second

// TestE2E runs the launcher's end-to-end scenarios against libvirtd, the
// independent ones in parallel: what the guest sees (1), phases and
// conditions through pause, stop, power-off, kill and ignored ACPI (2),
// idempotent Sync and clean Delete (3), and Watch delivering each
// transition in order within a second of libvirt's event (4, checked in
// every scenario of 2).
func TestE2E(t *testing.T) {
	e := newEnv(t)
	t.Run("group", func(t *testing.T) {
		t.Run("GuestSeesSpec", func(t *testing.T) { t.Parallel(); testGuestSeesSpec(t, e) })
		t.Run("PauseUnpauseStop", func(t *testing.T) { t.Parallel(); testPauseUnpauseStop(t, e) })
		t.Run("GuestPowersOff", func(t *testing.T) { t.Parallel(); testGuestPowersOff(t, e) })
		t.Run("QEMUKilled", func(t *testing.T) { t.Parallel(); testQEMUKilled(t, e) })
		t.Run("ACPIIgnored", func(t *testing.T) { t.Parallel(); testACPIIgnored(t, e) })
		t.Run("SyncIdempotentDelete", func(t *testing.T) { t.Parallel(); testSyncIdempotentDelete(t, e) })
		t.Run("SyncConcurrent", func(t *testing.T) { t.Parallel(); testSyncConcurrent(t, e) })
		t.Run("InvalidVMI", func(t *testing.T) { t.Parallel(); testInvalidVMI(t, e) })
	})
}

// testGuestSeesSpec boots a VMI with 2 vCPUs, 256Mi (hotpluggable to
// 1Gi), two virtio disks with serials (a containerDisk and an empty disk),
// a cloud-init NoCloud volume and a NIC with a fixed MAC, and checks each
// against what the guest printed on its console.
func testGuestSeesSpec(t *testing.T, e *env) {
	const (
		rootSerial = "E2E-ROOT-0001"
		dataSerial = "E2E-DATA-0002"
		mac        = "02:00:5e:10:20:30"
		rootSize   = 24 << 20
		dataSize   = 40 << 20
	)
	userData := "#cloud-config\n# e2e " + uniqueName("user-data") + "\nruncmd: [\"true\"]\n"
	// The root disk is a containerDisk image imported into the store, as
	// an air-gapped host fills it.
	image := "localhost/vmi2libvirt/e2e-root:" + strconv.Itoa(os.Getpid())
	disk, err := testguest.DiskImage("disk.img", make([]byte, rootSize))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testguest.ImportImage(e.layout.ImageStore, image, disk); err != nil {
		t.Fatal(err)
	}

	name := uniqueName("e2e-sees")
	yaml := fmt.Sprintf(vmiYAML, name, 30, "", testguest.ActionACPI,
		// maxGuest asks for memory hotplug, which Debian's libvirt 9.0
		// refuses: the launcher must still define and run the domain.
		"    cpu:\n      cores: 2\n    memory:\n      guest: 256Mi\n      maxGuest: 1Gi\n",
		`      disks:
      - name: root
        serial: `+rootSerial+`
        disk: {bus: virtio}
      - name: data
        serial: `+dataSerial+`
        disk: {bus: virtio}
      - name: cloudinit
        disk: {bus: virtio}
      interfaces:
      - name: default
        masquerade: {}
        macAddress: "`+mac+`"`,
		`  networks:
  - name: default
    pod: {}
  volumes:
  - name: root
    containerDisk:
      image: `+image+`
  - name: data
    emptyDisk:
      capacity: 40Mi
  - name: cloudinit
    cloudInitNoCloud:
      userData: |
`+indent(userData, "        "))
	vmi := decodeVMI(t, yaml)
	e.sync(t, vmi)
	r := e.waitConsole(t, vmi, bootTimeout)

	if r.CPUs != 2 {
		t.Errorf("guest sees %d CPUs, want 2", r.CPUs)
	}
	// MemTotal is the guest memory less what the kernel keeps for itself.
	if r.MemTotalKiB <= 256*1024*3/4 || r.MemTotalKiB > 256*1024 {
		t.Errorf("guest sees MemTotal %d KiB, want a little less than 262144", r.MemTotalKiB)
	}
	for serial, size := range map[string]int64{rootSerial: rootSize, dataSerial: dataSize} {
		d := r.DiskBySerial(serial)
		if d == nil {
			t.Errorf("guest sees no disk with serial %s; disks %+v", serial, r.Disks)
			continue
		}
		if d.Size != size {
			t.Errorf("disk %s (%s) is %d bytes, want %d", serial, d.Name, d.Size, size)
		}
	}
	var macs []string
	for _, n := range r.NICs {
		macs = append(macs, n.MAC)
	}
	if len(r.NICs) != 1 || r.NICs[0].MAC != mac {
		t.Errorf("guest NIC MACs %v, want [%s]", macs, mac)
	}
	if got, ok := r.UserData(); !ok || got != userData {
		t.Errorf("user-data on the cidata ISO = %q (found %v), want %q", got, ok, userData)
	}
	if iso := r.ISO("cidata"); iso != nil {
		if md := string(iso.Files["meta-data"]); !strings.Contains(md, "instance-id") {
			t.Errorf("meta-data without instance-id: %q", md)
		}
	}

	// The status names the interface with the VMI's MAC and the machine
	// type libvirt expanded.
	st, err := e.l.Status(context.Background(), vmi)
	if err != nil {
		t.Fatal(err)
	}
	if st.Phase != v1.Running {
		t.Errorf("phase %s, want Running", st.Phase)
	}
	if len(st.Interfaces) != 1 || st.Interfaces[0].Name != "default" || st.Interfaces[0].MAC != mac {
		t.Errorf("status interfaces %+v, want default with MAC %s", st.Interfaces, mac)
	}
	if st.Machine == nil || !strings.HasPrefix(st.Machine.Type, "pc-q35-") {
		t.Errorf("status machine %+v, want pc-q35-<version>", st.Machine)
	}
	if c := condition(st, v1.VirtualMachineInstanceReady); c == nil || c.Status != k8sv1.ConditionTrue {
		t.Errorf("Ready condition %+v, want True", c)
	}
}

// testPauseUnpauseStop: Scheduled → Running; Pause → Paused condition
// PausedByUser; Unpause → Running; Stop → Succeeded once the guest powers
// off on the ACPI power button.
func testPauseUnpauseStop(t *testing.T, e *env) {
	ctx := context.Background()
	vmi := guestVMI(t, uniqueName("e2e-pause"), 30, testguest.ActionACPI)
	e.sync(t, vmi)
	e.watch.waitPhase(t, vmi.Name, v1.Running, 10*time.Second)
	e.waitLine(t, vmi, "waiting for the ACPI power button", bootTimeout)

	if err := e.l.Pause(ctx, vmi); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	ev := e.watch.waitFor(t, vmi.Name, "Paused condition", 5*time.Second, func(ev launcher.Event) bool {
		return stateKey(ev.Status) == "Running/PausedByUser"
	})
	if c := condition(ev.Status, v1.VirtualMachineInstanceReady); c == nil || c.Status != k8sv1.ConditionFalse {
		t.Errorf("Ready while paused = %+v, want False", c)
	}
	// Sync leaves a domain paused by the user alone.
	if err := e.l.Sync(ctx, vmi); err != nil {
		t.Fatalf("Sync while paused: %v", err)
	}
	if st, _ := e.l.Status(ctx, vmi); stateKey(st) != "Running/PausedByUser" {
		t.Errorf("after Sync the paused VMI is %s, want still paused", stateKey(st))
	}
	if err := e.l.Unpause(ctx, vmi); err != nil {
		t.Fatalf("Unpause: %v", err)
	}
	if err := e.l.Stop(ctx, vmi); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	wantEnd(t, e.watch.waitPhase(t, vmi.Name, v1.Succeeded, 5*time.Second), "GuestShutdown")
	if !strings.Contains(e.serialLog(vmi), "power button") {
		t.Errorf("the guest did not see the power button; console:\n%s", e.serialLog(vmi))
	}
	e.checkTransitions(t, vmi, []string{"Scheduled", "Running", "Running/PausedByUser", "Running", "Succeeded"})
}

// testGuestPowersOff: a guest that powers itself off ends Succeeded.
func testGuestPowersOff(t *testing.T, e *env) {
	vmi := guestVMI(t, uniqueName("e2e-poweroff"), 30, testguest.ActionPowerOff)
	e.sync(t, vmi)
	wantEnd(t, e.watch.waitPhase(t, vmi.Name, v1.Succeeded, bootTimeout), "GuestShutdown")
	e.checkTransitions(t, vmi, []string{"Scheduled", "Running", "Succeeded"})
}

// testQEMUKilled: a QEMU process killed with SIGKILL ends Failed.
func testQEMUKilled(t *testing.T, e *env) {
	vmi := guestVMI(t, uniqueName("e2e-kill"), 30, testguest.ActionACPI)
	e.sync(t, vmi)
	e.watch.waitPhase(t, vmi.Name, v1.Running, 10*time.Second)
	pidFile := "/run/libvirt/qemu/" + domainName(vmi) + ".pid"
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("QEMU pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 1 {
		t.Fatalf("QEMU pid file %s holds %q", pidFile, raw)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill QEMU %d: %v", pid, err)
	}
	wantEnd(t, e.watch.waitPhase(t, vmi.Name, v1.Failed, 10*time.Second), "Crashed")
	e.checkTransitions(t, vmi, []string{"Scheduled", "Running", "Failed"})
}

// testACPIIgnored: Stop on a guest that ignores the ACPI power button
// destroys it once the grace period has passed: Failed (ACPI on, grace
// period set).
func testACPIIgnored(t *testing.T, e *env) {
	const grace = 3
	vmi := guestVMI(t, uniqueName("e2e-ignore"), grace, testguest.ActionIgnore)
	e.sync(t, vmi)
	e.waitLine(t, vmi, testguest.EndMarker, bootTimeout)
	time.Sleep(500 * time.Millisecond) // let the guest reach its wait loop
	start := time.Now()
	if err := e.l.Stop(context.Background(), vmi); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if took := time.Since(start); took < grace*time.Second {
		t.Errorf("Stop returned after %s, before the %ds grace period", took, grace)
	}
	wantEnd(t, e.watch.waitPhase(t, vmi.Name, v1.Failed, 5*time.Second), "Destroyed")
	e.checkTransitions(t, vmi, []string{"Scheduled", "Running", "Failed"})
}

// testSyncIdempotentDelete: Sync twice leaves one unchanged domain (one
// definition, the same inactive XML); Delete leaves no domain and no
// files. The VMI starts paused (spec.startStrategy), so it costs no CPU.
func testSyncIdempotentDelete(t *testing.T, e *env) {
	ctx := context.Background()
	name := uniqueName("e2e-idem")
	vmi := decodeVMI(t, fmt.Sprintf(vmiYAML, name, 30, "  startStrategy: Paused\n", testguest.ActionACPI,
		"    memory:\n      guest: 128Mi\n", `      disks:
      - name: data
        serial: IDEM
        disk: {bus: virtio}`, `  volumes:
  - name: data
    emptyDisk:
      capacity: 8Mi`))
	dn := domainName(vmi)
	e.sync(t, vmi)
	e.watch.waitFor(t, name, "paused start", 10*time.Second, func(ev launcher.Event) bool {
		return stateKey(ev.Status) == "Running/PausedByUser"
	})
	before := inactiveXML(t, e.conn, dn)
	defined := e.events.count(dn, libvirt.DOMAIN_EVENT_DEFINED)
	started := e.events.count(dn, libvirt.DOMAIN_EVENT_STARTED)

	if err := e.l.Sync(ctx, vmi); err != nil {
		t.Fatalf("second Sync: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // let any event arrive
	if after := inactiveXML(t, e.conn, dn); after != before {
		t.Errorf("second Sync changed the inactive definition")
	}
	if n := e.events.count(dn, libvirt.DOMAIN_EVENT_DEFINED); n != defined || n != 1 {
		t.Errorf("domain defined %d times (before the second Sync: %d), want once", n, defined)
	}
	if n := e.events.count(dn, libvirt.DOMAIN_EVENT_STARTED); n != started {
		t.Errorf("second Sync started the domain again")
	}
	doms, err := e.conn.ListAllDomains(0)
	if err != nil {
		t.Fatal(err)
	}
	count := 0
	for _, d := range doms {
		if n, _ := d.GetName(); n == dn {
			count++
		}
		_ = d.Free()
	}
	if count != 1 {
		t.Errorf("%d domains named %s, want 1", count, dn)
	}
	if st, _ := e.l.Status(ctx, vmi); stateKey(st) != "Running/PausedByUser" {
		t.Errorf("second Sync resumed a VMI started paused: %s", stateKey(st))
	}

	state := e.layout.StateFolder(vmi.DeepCopy())
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("state folder %s missing while the VMI runs: %v", state, err)
	}
	if err := e.l.Delete(ctx, vmi); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if d, err := e.conn.LookupDomainByName(dn); err == nil {
		_ = d.Free()
		t.Errorf("domain %s still exists after Delete", dn)
	} else if lverr := (libvirt.Error{}); !errors.As(err, &lverr) || lverr.Code != libvirt.ERR_NO_DOMAIN {
		t.Errorf("lookup after Delete: %v, want no domain", err)
	}
	if _, err := os.Stat(state); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state folder %s after Delete: %v, want it gone", state, err)
	}
	if entries, _ := os.ReadDir(e.layout.StateDir); len(entries) > 0 {
		var names []string
		for _, en := range entries {
			names = append(names, en.Name())
		}
		t.Logf("state dir holds %v (other tests' VMIs)", names)
	}
	e.watch.waitFor(t, name, "Deleted", 5*time.Second, func(ev launcher.Event) bool { return ev.Deleted })
}

// testSyncConcurrent: Sync of the same VMI from 8 goroutines at once makes
// one domain, defined and started once, and no error.
func testSyncConcurrent(t *testing.T, e *env) {
	name := uniqueName("e2e-conc")
	vmi := decodeVMI(t, fmt.Sprintf(vmiYAML, name, 30, "  startStrategy: Paused\n", testguest.ActionACPI,
		"    memory:\n      guest: 128Mi\n", "      {}", ""))
	dn := domainName(vmi)
	t.Cleanup(func() { _ = e.l.Delete(context.Background(), vmi) })
	errs := make(chan error, 8)
	for range 8 {
		go func() { errs <- e.l.Sync(context.Background(), vmi.DeepCopy()) }()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Sync: %v", err)
		}
	}
	e.watch.waitFor(t, name, "paused start", 10*time.Second, func(ev launcher.Event) bool {
		return stateKey(ev.Status) == "Running/PausedByUser"
	})
	time.Sleep(300 * time.Millisecond)
	if n := e.events.count(dn, libvirt.DOMAIN_EVENT_DEFINED); n != 1 {
		t.Errorf("defined %d times, want once", n)
	}
	if n := e.events.count(dn, libvirt.DOMAIN_EVENT_STARTED); n != 1 {
		t.Errorf("started %d times, want once", n)
	}
}

// testInvalidVMI: Sync refuses a VMI that fails validation with an error
// naming the field (errors.As finds the *field.Error), and defines nothing.
func testInvalidVMI(t *testing.T, e *env) {
	name := uniqueName("e2e-invalid")
	vmi := decodeVMI(t, fmt.Sprintf(vmiYAML, name, 30, "", testguest.ActionACPI,
		"    memory:\n      guest: 128Mi\n", `      disks:
      - name: nosuchvolume
        disk: {bus: virtio}`, ""))
	err := e.l.Sync(context.Background(), vmi)
	var ferr *field.Error
	if !errors.As(err, &ferr) {
		t.Fatalf("Sync of an invalid VMI: %v, want a *field.Error", err)
	}
	if !strings.HasPrefix(ferr.Field, "spec.domain.devices.disks[0]") {
		t.Errorf("field error on %s, want spec.domain.devices.disks[0]...: %v", ferr.Field, err)
	}
	if d, lerr := e.conn.LookupDomainByName(domainName(vmi)); lerr == nil {
		_ = d.Free()
		t.Errorf("an invalid VMI got a domain")
	}
	if _, serr := os.Stat(e.layout.StateFolder(vmi.DeepCopy())); serr == nil {
		t.Errorf("an invalid VMI got a state folder")
	}
}

// wantEnd checks the reason a final status gives.
func wantEnd(t *testing.T, ev launcher.Event, reason string) {
	t.Helper()
	if ev.Status.Reason != reason {
		t.Errorf("%s ended %s with reason %q, want %q", ev.Name, ev.Status.Phase, ev.Status.Reason, reason)
	}
}

// inactiveXML returns the inactive definition of domain name.
func inactiveXML(t testing.TB, c *libvirt.Connect, name string) string {
	t.Helper()
	d, err := c.LookupDomainByName(name)
	if err != nil {
		t.Fatalf("lookup %s: %v", name, err)
	}
	defer d.Free()
	x, err := d.GetXMLDesc(libvirt.DOMAIN_XML_INACTIVE)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// indent prefixes each line of s with p.
func indent(s, p string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	for i := range lines {
		lines[i] = p + lines[i]
	}
	return strings.Join(lines, "\n") + "\n"
}
