package main

import (
	"context"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// TestE2EAPIServerRestart: the API server is stopped under a running
// agent, its guest changes meanwhile (paused through libvirt), and the
// API server comes back: the agent reconnects — its watch delivers a VMI
// created after the restart — and the status catches up with what
// happened while it was away. The guest is never touched. (A cluster of
// its own: the others' must stay up.)
func TestE2EAPIServerRestart(t *testing.T) {
	w := newWorld(t)
	ns, node, dir := w.namespace(t, "restart"), uniqueName("node"), stateDir(t)
	a := w.startNode(t, node, dir)
	w.create(t, bound(guestVMI(ns, "steady", 0, testguest.ActionIgnore), node))
	before := w.waitReady(t, ns, "steady", 3*time.Minute)
	_, id, _ := w.domain(t, ns, "steady")

	if err := w.cluster.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	dom, err := w.conn.LookupDomainByName(domainName(ns, "steady"))
	if err != nil {
		t.Fatal(err)
	}
	defer dom.Free()
	if err := dom.Suspend(); err != nil {
		t.Fatal(err)
	}
	// The agent tries to write the Paused condition, and cannot.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if line := a.waitFor(ctx, t, "Reconciler error"); !strings.Contains(line, "connection refused") {
		t.Errorf("the agent's first reconcile error while the API server is away: %q, want connection refused", line)
	}
	if code, _ := a.get(t, "/healthz"); code != http.StatusOK {
		t.Errorf("/healthz while the API server is away: %d, want 200 (the agent lives)", code)
	}

	if err := w.cluster.StartAPIServer(); err != nil {
		t.Fatal(err)
	}
	paused := w.waitVMI(t, ns, "steady", "Paused", time.Minute, func(v *virtv1.VirtualMachineInstance) bool {
		return v != nil && conditionStatus(v, virtv1.VirtualMachineInstancePaused) == k8sv1.ConditionTrue
	})
	if !transition(paused, virtv1.Running).Equal(transition(before, virtv1.Running)) {
		t.Errorf("phase transitions %+v, were %+v", paused.Status.PhaseTransitionTimestamps, before.Status.PhaseTransitionTimestamps)
	}
	w.create(t, bound(guestVMI(ns, "after", 0, testguest.ActionIgnore), node))
	w.waitPhase(t, ns, "after", virtv1.Running, 3*time.Minute)
	if err := dom.Resume(); err != nil {
		t.Fatal(err)
	}
	w.waitReady(t, ns, "steady", time.Minute)
	if _, after, _ := w.domain(t, ns, "steady"); after != id {
		t.Errorf("domain ID %d after the API server's restart, was %d", after, id)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if code, body := a.get(t, path); code != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
	}

	for _, name := range []string{"steady", "after"} {
		if err := w.client.Delete(context.Background(), w.get(t, ns, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{"steady", "after"} {
		w.waitGone(t, ns, name, 2*time.Minute)
	}
	a.stop(t, os.Interrupt)
}
