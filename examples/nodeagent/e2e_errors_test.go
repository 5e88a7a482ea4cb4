package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// settle is how long the error tests watch an agent that should do
// nothing more: long enough for several of its retries (200 ms doubling)
// had it kept retrying.
const settle = 3 * time.Second

// testInvalidFailsOnce: a VMI the launcher refuses becomes Failed once,
// with the field path in its Synchronized condition and one SyncFailed
// Event, and is never retried: the reconcile count stays flat, also when
// the object changes, and nothing is made on the host.
func testInvalidFailsOnce(t *testing.T, w *world) {
	ns, node, dir := w.namespace(t, "invalid"), uniqueName("node"), stateDir(t)
	a := w.startNode(t, node, dir)
	vmi := bound(guestVMI(ns, "bad", 0, testguest.ActionPowerOff), node)
	vmi.Spec.Domain.Devices.Interfaces = []virtv1.Interface{{
		Name: "default", Model: "virtio-net",
		InterfaceBindingMethod: virtv1.InterfaceBindingMethod{Masquerade: &virtv1.InterfaceMasquerade{}},
	}}
	vmi.Spec.Networks = []virtv1.Network{*virtv1.DefaultPodNetwork()}
	w.create(t, vmi)

	got := w.waitPhase(t, ns, "bad", virtv1.Failed, time.Minute)
	const want = `spec.domain.devices.interfaces[0].model: Unsupported value: "virtio-net": supported values:`
	c := condition(got, virtv1.VirtualMachineInstanceSynchronized)
	if got.Status.Reason != "Invalid" || c == nil || c.Status != k8sv1.ConditionFalse || c.Reason != "Synchronizing with the Domain failed." || !strings.HasPrefix(c.Message, want) {
		t.Errorf("refused VMI: %s\nwant reason Invalid and Synchronized False with message %q...", describe(got), want)
	}
	w.waitEvent(t, ns, got.UID, "Stopped", 30*time.Second)
	time.Sleep(settle)
	before := a.reconciles(t)
	// A change of the object brings it back once; a VMI that failed is
	// not synced again.
	patch := client.MergeFrom(got.DeepCopy())
	metav1.SetMetaDataAnnotation(&got.ObjectMeta, "example.com/touched", "yes")
	if err := w.client.Patch(context.Background(), got, patch); err != nil {
		t.Fatal(err)
	}
	time.Sleep(settle)
	after := a.reconciles(t)
	if after != before+1 {
		t.Errorf("reconciles: %v before the change, %v %s after it; want exactly one more", before, after, settle)
	}
	events := w.events(t, ns, got.UID)
	if events["SyncFailed"] != 1 || events["Stopped"] != 1 || len(events) != 2 {
		t.Errorf("Events %v, want one SyncFailed and one Stopped", events)
	}
	for _, e := range w.eventList(t, ns, got.UID) {
		if e.Reason == "SyncFailed" && (e.Type != k8sv1.EventTypeWarning || !strings.HasPrefix(e.Message, want)) {
			t.Errorf("SyncFailed Event %s %q, want a Warning naming the field", e.Type, e.Message)
		}
	}
	if exists, _, _ := w.domain(t, ns, "bad"); exists {
		t.Errorf("a refused VMI has a domain")
	}
	if _, err := os.Stat(stateFolder(dir, ns, "bad")); !os.IsNotExist(err) {
		t.Errorf("a refused VMI has a state folder: %v", err)
	}

	// Deleting it needs nothing from the host: the object goes at once.
	if err := w.client.Delete(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	w.waitGone(t, ns, "bad", 30*time.Second)
}

// testHostNotReadyRetried: a VMI the host cannot take yet (here the state
// folder is a file) stays Scheduled (taken by its node, its domain not
// created: KubeVirt's Scheduled) with the reason in its Synchronized
// condition and is retried with backoff — a few times, not a storm —
// until the host is fixed; then it runs.
func testHostNotReadyRetried(t *testing.T, w *world) {
	ns, node, dir := w.namespace(t, "notready"), uniqueName("node"), stateDir(t)
	blocked := dir + "/vmis"
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	a := w.startNode(t, node, blocked)
	w.create(t, bound(guestVMI(ns, "later", 0, testguest.ActionIgnore), node))

	got := w.waitVMI(t, ns, "later", "Scheduled with a sync failure", time.Minute, func(v *virtv1.VirtualMachineInstance) bool {
		return v != nil && v.Status.Phase == virtv1.Scheduled && condition(v, virtv1.VirtualMachineInstanceSynchronized) != nil
	})
	want := "HostLayout.StateDir " + blocked + " is not a folder"
	if c := condition(got, virtv1.VirtualMachineInstanceSynchronized); c.Status != k8sv1.ConditionFalse || !strings.Contains(c.Message, want) {
		t.Errorf("Synchronized condition %+v, want False saying %q", c, want)
	}
	before := a.reconciles(t)
	time.Sleep(settle)
	retries := a.reconciles(t) - before
	// Backoff from 200 ms, doubling: about 3 retries in 3 s. Without
	// backoff there would be hundreds; without retries, none.
	if retries < 1 || retries > 8 {
		t.Errorf("%v reconciles in %s while the host is not ready; want a few (backoff)", retries, settle)
	}
	if events := w.events(t, ns, got.UID); events["SyncFailed"] != 1 {
		t.Errorf("Events %v, want one SyncFailed for one reason", events)
	}

	if err := os.Remove(blocked); err != nil {
		t.Fatal(err)
	}
	// The status writer says Running as soon as libvirt does, which can be
	// before the Sync that started the guest returns and drops the
	// Synchronized condition; the condition must then go.
	ok := w.waitVMI(t, ns, "later", "Running and Ready, the Synchronized condition gone", 2*time.Minute, func(v *virtv1.VirtualMachineInstance) bool {
		return v != nil && v.Status.Phase == virtv1.Running && conditionStatus(v, virtv1.VirtualMachineInstanceReady) == k8sv1.ConditionTrue &&
			condition(v, virtv1.VirtualMachineInstanceSynchronized) == nil
	})
	if err := w.client.Delete(context.Background(), ok); err != nil {
		t.Fatal(err)
	}
	w.waitGone(t, ns, "later", time.Minute)
	if exists, _, _ := w.domain(t, ns, "later"); exists {
		t.Errorf("domain left after the VMI is gone")
	}
}
