package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/agent"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// testKillAndAdopt: SIGKILL of the agent leaves the guest running; a new
// agent of the same node adopts it — same domain ID, one boot on its
// console — and its status continues: the same phase transitions and no
// second Started Event, and changes made behind its back (a pause through
// libvirt) reach the object.
func testKillAndAdopt(t *testing.T, w *world) {
	ns, node, dir := w.namespace(t, "adopt"), uniqueName("node"), stateDir(t)
	a := w.startNode(t, node, dir)
	w.create(t, bound(guestVMI(ns, "keep", 30, testguest.ActionACPI), node))
	before := w.waitReady(t, ns, "keep", 3*time.Minute)
	waitConsole(t, dir, ns, "keep", "testguest: waiting for the ACPI power button", 3*time.Minute)
	_, id, _ := w.domain(t, ns, "keep")

	a.stop(t, os.Kill)
	if _, after, _ := w.domain(t, ns, "keep"); after != id {
		t.Fatalf("domain ID %d after SIGKILL of the agent, was %d", after, id)
	}

	b := w.startNode(t, node, dir)
	dom, err := w.conn.LookupDomainByName(domainName(ns, "keep"))
	if err != nil {
		t.Fatal(err)
	}
	defer dom.Free()
	if err := dom.Suspend(); err != nil {
		t.Fatal(err)
	}
	paused := w.waitVMI(t, ns, "keep", "Paused", time.Minute, func(v *virtv1.VirtualMachineInstance) bool {
		return v != nil && conditionStatus(v, virtv1.VirtualMachineInstancePaused) == k8sv1.ConditionTrue
	})
	if c := condition(paused, virtv1.VirtualMachineInstancePaused); c.Reason != "PausedByUser" {
		t.Errorf("Paused condition %+v, want reason PausedByUser", c)
	}
	if err := dom.Resume(); err != nil {
		t.Fatal(err)
	}
	resumed := w.waitReady(t, ns, "keep", time.Minute)
	if got, want := transition(resumed, virtv1.Running), transition(before, virtv1.Running); !got.Equal(want) || len(resumed.Status.PhaseTransitionTimestamps) != len(before.Status.PhaseTransitionTimestamps) {
		t.Errorf("phase transitions after adoption %+v, were %+v", resumed.Status.PhaseTransitionTimestamps, before.Status.PhaseTransitionTimestamps)
	}
	if _, after, _ := w.domain(t, ns, "keep"); after != id {
		t.Errorf("domain ID %d after adoption, was %d", after, id)
	}
	if boots := strings.Count(serialLog(dir, ns, "keep"), testguest.BeginMarker); boots != 1 {
		t.Errorf("the guest booted %d times", boots)
	}
	if events := w.events(t, ns, before.UID); events["Started"] != 1 || events["Created"] != 1 {
		t.Errorf("Events %v, want Created and Started once", events)
	}

	if err := w.client.Delete(context.Background(), resumed); err != nil {
		t.Fatal(err)
	}
	w.waitGone(t, ns, "keep", 2*time.Minute)
	if exists, _, _ := w.domain(t, ns, "keep"); exists {
		t.Errorf("domain left after the VMI is gone")
	}
	b.stop(t, os.Interrupt)
}

// testDeletedWhileDown: VMIs deleted while their agent was stopped are
// cleaned up when it comes back: one deleted as usual (its object waits,
// deleting, behind the agent's finalizer), one whose object is gone
// altogether (its finalizer removed by hand), whose domain the agent finds
// with the launcher's List, and one whose name a new VMI took meanwhile:
// the old guest goes, the new VMI boots a guest of its own.
func testDeletedWhileDown(t *testing.T, w *world) {
	ns, node, dir := w.namespace(t, "down"), uniqueName("node"), stateDir(t)
	a := w.startNode(t, node, dir)
	names := []string{"waits", "gone", "reborn"}
	for _, name := range names {
		w.create(t, bound(guestVMI(ns, name, 30, testguest.ActionACPI), node))
	}
	old := map[string]*virtv1.VirtualMachineInstance{}
	for _, name := range names {
		old[name] = w.waitReady(t, ns, name, 3*time.Minute)
		waitConsole(t, dir, ns, name, "testguest: waiting for the ACPI power button", 3*time.Minute)
	}
	_, rebornID, _ := w.domain(t, ns, "reborn")
	a.stop(t, os.Interrupt)
	for _, name := range names {
		if exists, id, _ := w.domain(t, ns, name); !exists || id < 0 {
			t.Fatalf("%s does not run after the agent stopped", name)
		}
	}

	ctx := context.Background()
	for _, name := range names {
		if err := w.client.Delete(ctx, old[name]); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"gone", "reborn"} {
		stripped := w.get(t, ns, name)
		patch := client.MergeFrom(stripped.DeepCopy())
		controllerutil.RemoveFinalizer(stripped, agent.Finalizer)
		if err := w.client.Patch(ctx, stripped, patch); err != nil {
			t.Fatal(err)
		}
		w.waitGone(t, ns, name, 30*time.Second)
	}
	w.create(t, bound(guestVMI(ns, "reborn", 30, testguest.ActionACPI), node))
	if v := w.get(t, ns, "waits"); v == nil || v.DeletionTimestamp == nil {
		t.Fatalf("waits: %s; want it deleting, held by the finalizer", describe(v))
	}

	b := w.startNode(t, node, dir)
	if line := b.waitFor(ctx, t, "nodeagent: watching VMIs"); !strings.Contains(line, "orphans=1") {
		t.Errorf("sweep: %q, want orphans=1 (the VMI whose object is gone; reborn's name is taken)", line)
	}
	w.waitGone(t, ns, "waits", 2*time.Minute)
	for _, name := range []string{"waits", "gone"} {
		deadline := time.Now().Add(2 * time.Minute)
		for {
			exists, _, _ := w.domain(t, ns, name)
			if !exists {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("domain of %s still defined", name)
			}
			time.Sleep(200 * time.Millisecond)
		}
		if _, err := os.Stat(stateFolder(dir, ns, name)); !os.IsNotExist(err) {
			t.Errorf("state folder of %s: %v, want it removed", name, err)
		}
	}
	// Both guests were asked to shut down, and did.
	if !strings.Contains(b.output(), "shutting down the guest of a VMI that is gone") {
		t.Errorf("the orphan's guest was not shut down gracefully:\n%s", b.output())
	}
	if got := w.events(t, ns, old["waits"].UID); got["ShuttingDown"] == 0 || got["Deleted"] == 0 {
		t.Errorf("Events of the VMI deleted while the agent was down: %v", got)
	}

	// The new VMI of the old name has a guest of its own.
	reborn := w.waitReady(t, ns, "reborn", 3*time.Minute)
	if reborn.UID == old["reborn"].UID {
		t.Fatal("the new reborn VMI has the old one's UID")
	}
	if _, id, _ := w.domain(t, ns, "reborn"); id == rebornID || id < 0 {
		t.Errorf("reborn's domain ID %d, the old guest's was %d: want a new guest", id, rebornID)
	}
	if err := w.client.Delete(ctx, reborn); err != nil {
		t.Fatal(err)
	}
	w.waitGone(t, ns, "reborn", 2*time.Minute)
	b.stop(t, os.Interrupt)
}
