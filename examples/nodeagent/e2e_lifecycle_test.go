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
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/agent"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// TestE2E runs the node agent against one test cluster and the real
// libvirtd; each subtest has agents, nodes and a namespace of its own.
func TestE2E(t *testing.T) {
	w := newWorld(t)
	t.Run("CreateRunDelete", func(t *testing.T) { testCreateRunDelete(t, w) })
	t.Run("InvalidFailsOnce", func(t *testing.T) { testInvalidFailsOnce(t, w) })
	t.Run("HostNotReadyRetried", func(t *testing.T) { testHostNotReadyRetried(t, w) })
	t.Run("KillAndAdopt", func(t *testing.T) { testKillAndAdopt(t, w) })
	t.Run("DeletedWhileDown", func(t *testing.T) { testDeletedWhileDown(t, w) })
	t.Run("TwoAgentsClaim", func(t *testing.T) { testTwoAgentsClaim(t, w) })
}

// testCreateRunDelete: a VMI bound to the node runs, with its status and
// Events written back as KubeVirt's components write them, and the
// agent's metrics and health; deleting it shuts the guest down through
// ACPI, removes its domain and state folder, and lets the object go.
func testCreateRunDelete(t *testing.T, w *world) {
	ns, node, dir := w.namespace(t, "run"), uniqueName("node"), stateDir(t)
	a := w.startNode(t, node, dir)
	created := time.Now()
	w.create(t, bound(guestVMI(ns, "tiny", 60, testguest.ActionACPI), node))

	vmi := w.waitReady(t, ns, "tiny", 3*time.Minute)
	if vmi.Status.NodeName != node {
		t.Errorf("status.nodeName %q, want %q", vmi.Status.NodeName, node)
	}
	if !controllerutil.ContainsFinalizer(vmi, agent.Finalizer) {
		t.Errorf("finalizers %v lack %s", vmi.Finalizers, agent.Finalizer)
	}
	var phases []string
	for _, pt := range vmi.Status.PhaseTransitionTimestamps {
		phases = append(phases, string(pt.Phase))
		if at := pt.PhaseTransitionTimestamp.Time; at.Before(created.Truncate(time.Second)) || at.After(time.Now()) {
			t.Errorf("phase %s entered at %s, outside the test's time", pt.Phase, at)
		}
	}
	if got := strings.Join(phases, ","); got != "Scheduled,Running" && got != "Pending,Scheduled,Running" {
		t.Errorf("phaseTransitionTimestamps %s, want Scheduled,Running (Pending first at most)", got)
	}
	if vmi.Status.Machine == nil || !strings.HasPrefix(vmi.Status.Machine.Type, "pc-q35-") {
		t.Errorf("status.machine %+v, want libvirt's expanded q35 machine type", vmi.Status.Machine)
	}
	if len(vmi.Status.Interfaces) != 1 || vmi.Status.Interfaces[0].Name != "default" || vmi.Status.Interfaces[0].MAC == "" {
		t.Errorf("status.interfaces %+v, want the default pod interface with its MAC", vmi.Status.Interfaces)
	}
	if c := condition(vmi, virtv1.VirtualMachineInstanceSynchronized); c != nil {
		t.Errorf("Synchronized condition %+v on a VMI that runs", c)
	}
	exists, id, owner := w.domain(t, ns, "tiny")
	if !exists || id < 0 || owner != node {
		t.Fatalf("domain %s: exists %v id %d owner %q; want running, owned by %s", domainName(ns, "tiny"), exists, id, owner, node)
	}
	w.waitEvent(t, ns, vmi.UID, "Started", 30*time.Second)
	for _, e := range w.eventList(t, ns, vmi.UID) {
		if e.Source.Component != agent.EventSource || e.Source.Host != node || e.Type != k8sv1.EventTypeNormal {
			t.Errorf("Event %s %s from %+v, want Normal from %s on %s", e.Reason, e.Message, e.Source, agent.EventSource, node)
		}
	}
	if got := w.events(t, ns, vmi.UID); got["Created"] != 1 || got["Started"] != 1 {
		t.Errorf("Events %v, want Created and Started once", got)
	}

	// Metrics and health on loopback.
	if n := a.metric(t, "kubevirt_vmi_phase_count", `node="`+node+`"`, `phase="running"`); n != 1 {
		t.Errorf("kubevirt_vmi_phase_count running: %v, want 1", n)
	}
	if n := a.metric(t, "kubevirt_vmi_phase_transition_time_from_creation_seconds_count", `phase="Running"`); n != 1 {
		t.Errorf("creation-to-Running histogram count %v, want 1", n)
	}
	for _, path := range []string{"/healthz", "/readyz", "/readyz/libvirt", "/readyz/informers"} {
		if code, body := a.get(t, path); code != http.StatusOK {
			t.Errorf("GET %s: %d %s", path, code, body)
		}
	}

	// Delete: the guest, waiting for the power button, powers off.
	waitConsole(t, dir, ns, "tiny", "testguest: waiting for the ACPI power button", 3*time.Minute)
	if err := w.client.Delete(context.Background(), vmi); err != nil {
		t.Fatal(err)
	}
	w.waitGone(t, ns, "tiny", 2*time.Minute)
	if exists, _, _ := w.domain(t, ns, "tiny"); exists {
		t.Errorf("domain %s still defined after the VMI is gone", domainName(ns, "tiny"))
	}
	if _, err := os.Stat(stateFolder(dir, ns, "tiny")); !os.IsNotExist(err) {
		t.Errorf("state folder: %v, want it removed", err)
	}
	got := w.events(t, ns, vmi.UID)
	for _, reason := range []string{"ShuttingDown", "Stopped", "Deleted"} {
		if got[reason] == 0 {
			t.Errorf("no %s Event after the delete; Events %v", reason, got)
		}
	}
	for _, e := range w.eventList(t, ns, vmi.UID) {
		if e.Reason == "Stopped" && e.Message != "The VirtualMachineInstance was shut down. Reason: GuestShutdown." {
			t.Errorf("Stopped Event %q, want the guest's own shutdown", e.Message)
		}
	}
	if n := a.metric(t, "kubevirt_vmi_phase_count", `node="`+node+`"`, `phase="running"`); n != 0 {
		t.Errorf("kubevirt_vmi_phase_count running after the delete: %v, want 0", n)
	}
	a.stop(t, os.Interrupt)
}
