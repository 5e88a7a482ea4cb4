package launcher_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// maxIdleStatusAllocs bounds the allocations of Status of a VMI whose
// domain libvirt's events prove unchanged since it was last read, paused
// (no guest facts to read): what a node agent's resync costs per idle VMI
// (issue 26: 100 of them in at most 100 ms of CPU).
const maxIdleStatusAllocs = 60

// TestE2EIdleStatus: Status of a VMI whose domain has had no libvirt
// event since it was read — on the same connection — reads nothing from
// libvirt (a paused guest: no guest facts either) and reports the same
// status, within maxIdleStatusAllocs allocations; a change made by another
// client (it resumes the guest) is an event, and Status reads the domain
// again and reports it; a new launcher of the same owner reports the same.
func TestE2EIdleStatus(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	vmi := decodeVMI(t, fmt.Sprintf(vmiYAML, uniqueName("e2e-idle"), 0, "  startStrategy: Paused\n", testguest.ActionIgnore,
		"    memory:\n      guest: 128Mi\n", "      {}", ""))
	e.sync(t, vmi)
	e.watch.waitFor(t, vmi.Name, "paused start", time.Minute, func(ev launcher.Event) bool {
		return stateKey(ev.Status) == "Running/PausedByUser"
	})
	time.Sleep(500 * time.Millisecond) // the events of the start have arrived
	first, err := e.l.Status(ctx, vmi)
	if err != nil {
		t.Fatal(err)
	}
	readings := launcher.Readings(e.l)
	for range 5 {
		st, err := e.l.Status(ctx, vmi)
		if err != nil {
			t.Fatal(err)
		}
		if stateKey(st) != stateKey(first) || len(st.Conditions) != len(first.Conditions) {
			t.Errorf("Status of an idle VMI changed: %+v, then %+v", first, st)
		}
	}
	if got := launcher.Readings(e.l) - readings; got != 0 {
		t.Errorf("5 Statuses of an idle VMI read its domain %d times, want none", got)
	}
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := e.l.Status(ctx, vmi); err != nil {
			t.Fatal(err)
		}
	})
	t.Logf("Status of an idle VMI: %.0f allocations", allocs)
	if allocs > maxIdleStatusAllocs {
		t.Errorf("Status of an idle VMI makes %.0f allocations, more than its bound %d", allocs, maxIdleStatusAllocs)
	}

	// Another client resumes the guest: an event, and Status reads again.
	dom, err := e.conn.LookupDomainByName(domainName(vmi))
	if err != nil {
		t.Fatal(err)
	}
	defer dom.Free()
	if err := dom.Resume(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var st v1.VirtualMachineInstanceStatus
	for {
		if st, err = e.l.Status(ctx, vmi); err != nil {
			t.Fatal(err)
		}
		if stateKey(st) == "Running" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if stateKey(st) != "Running" {
		t.Fatalf("Status after another client resumed the guest: %s, want Running (not paused)", stateKey(st))
	}
	if launcher.Readings(e.l) == readings {
		t.Error("Status after a change elsewhere did not read the domain")
	}

	// A new launcher of the same owner decides from libvirt alone.
	again, err := launcher.New(ctx, launcher.Config{URI: testURI, Emulate: true, Owner: e.l.Owner(),
		Layout: convert.HostLayout{StateDir: e.layout.StateDir, ImageStore: convert.DefaultImageStore}})
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	st2, err := again.Status(ctx, vmi)
	if err != nil {
		t.Fatal(err)
	}
	if stateKey(st2) != stateKey(st) {
		t.Errorf("a new launcher reports %s, the first %s", stateKey(st2), stateKey(st))
	}
}
