package launcher_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// maxSteadySyncAllocs bounds the allocations of a Sync of a VMI that runs
// as planned (issue 26: at most 300).
const maxSteadySyncAllocs = 300

// TestE2ESteadySync: Sync of a VMI that runs as its spec says — what a
// controller calls on every resync — writes nothing to libvirt: no
// definition, no start, no metadata change, its status unchanged; the
// first makes one plan (one run of the pipeline: hostplan's
// TestMakeRunsThePipelineOnce counts its admission, conversion and
// marshal), the next ones none, within maxSteadySyncAllocs allocations;
// a change of the domain elsewhere makes the next one plan again.
func TestE2ESteadySync(t *testing.T) {
	e := newEnv(t)
	vmi := guestVMI(t, uniqueName("e2e-steady"), 0, testguest.ActionIgnore)
	e.sync(t, vmi)
	e.watch.waitPhase(t, vmi.Name, v1.Running, 3*time.Minute)
	name := testNamespace + "_" + vmi.Name

	var metadataChanges atomic.Int32
	id, err := e.conn.DomainEventMetadataChangeRegister(nil, func(_ *libvirt.Connect, d *libvirt.Domain, _ *libvirt.DomainEventMetadataChange) {
		if n, _ := d.GetName(); n == name {
			metadataChanges.Add(1)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer e.conn.DomainEventDeregister(id)
	ctx := context.Background()
	before, err := e.l.Status(ctx, vmi)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the events of the start have arrived
	lifecycle := len(e.events.of(name))
	watched := len(e.watch.of(vmi.Name))
	plans := launcher.Plans(e.l)
	const syncs = 5
	for range syncs {
		if err := e.l.Sync(ctx, vmi); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond) // libvirt's events of a write, had there been one, arrive by now
	if got := launcher.Plans(e.l) - plans; got > 1 {
		t.Errorf("%d Syncs made %d plans, want at most one: the first finds the domain as planned and the others cost nothing", syncs, got)
	}
	if got := len(e.events.of(name)) - lifecycle; got != 0 {
		t.Errorf("steady Syncs caused %d lifecycle events (a define or a start): %v", got, e.events.of(name)[lifecycle:])
	}
	if n := metadataChanges.Load(); n != 0 {
		t.Errorf("steady Syncs changed the domain's metadata %d times", n)
	}
	if got := len(e.watch.of(vmi.Name)) - watched; got != 0 {
		t.Errorf("steady Syncs published %d status changes", got)
	}
	if allocs := testing.AllocsPerRun(20, func() {
		if err := e.l.Sync(ctx, vmi); err != nil {
			t.Fatal(err)
		}
	}); allocs > maxSteadySyncAllocs {
		t.Errorf("a steady Sync makes %.0f allocations, more than its bound %d", allocs, maxSteadySyncAllocs)
	}

	// A change of the domain behind the launcher's back (its title, by
	// another client) is an event: the next Sync plans again, and writes
	// nothing, since the domain still runs as planned.
	plans = launcher.Plans(e.l)
	dom, err := e.conn.LookupDomainByName(name)
	if err != nil {
		t.Fatal(err)
	}
	defer dom.Free()
	if err := dom.SetMetadata(libvirt.DOMAIN_METADATA_TITLE, "changed elsewhere", "", "", libvirt.DOMAIN_AFFECT_LIVE); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for launcher.Plans(e.l) == plans && time.Now().Before(deadline) {
		if err := e.l.Sync(ctx, vmi); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if launcher.Plans(e.l) == plans {
		t.Error("a Sync after the domain changed elsewhere made no plan")
	}
	if got := len(e.events.of(name)) - lifecycle; got != 0 {
		t.Errorf("Syncs after a title change caused %d lifecycle events", got)
	}
	after, err := e.l.Status(ctx, vmi)
	if err != nil {
		t.Fatal(err)
	}
	if after.Phase != before.Phase || len(after.PhaseTransitionTimestamps) != len(before.PhaseTransitionTimestamps) {
		t.Errorf("status changed: %+v, then %+v", before, after)
	}
}
