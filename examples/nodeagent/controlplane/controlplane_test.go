package controlplane_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/scheme"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/testcluster"
)

// TestControlPlane runs the control plane (command controlplane, a process
// of its own with its own credentials and RBAC) against a real API server,
// with no node agent: what admission and the VM controller do before any
// guest runs. (The end-to-end tests of examples/nodeagent run guests.)
func TestControlPlane(t *testing.T) {
	c := testcluster.Start(t)
	c.StartControlPlane(t) // its output is logged when the test fails
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(c.Config, client.Options{Scheme: s})
	if err != nil {
		t.Fatal(err)
	}
	w := &world{c: c, cl: cl}
	t.Run("RefusesInvalid", func(t *testing.T) { testRefusesInvalid(t, w) })
	t.Run("DefaultsAndKeepsStatus", func(t *testing.T) { testDefaultsAndKeepsStatus(t, w) })
	t.Run("VMLifecycle", func(t *testing.T) { testVMLifecycle(t, w) })
}

type world struct {
	c  *testcluster.Cluster
	cl client.Client
}

var nameCount int

// namespace creates a namespace of the test's own.
func (w *world) namespace(t *testing.T, base string) string {
	t.Helper()
	nameCount++
	ns := &k8sv1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", base, nameCount)}}
	if err := w.cl.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// apply runs kubectl apply -f of the YAML doc in namespace ns.
func (w *world) apply(t *testing.T, ns, doc string) (stdout, stderr string, err error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "obj.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return w.c.Kubectl(context.Background(), "apply", "-n", ns, "-f", path)
}

// kubectl runs kubectl and fails the test when it fails.
func (w *world) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	stdout, stderr, err := w.c.Kubectl(context.Background(), args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return stdout
}

// vmiDoc is a small valid VMI, its first disk on bus.
func vmiDoc(name, bus string) string {
	return `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: ` + name + `
spec:
  domain:
    memory: {guest: 64Mi}
    devices:
      disks:
      - name: scratch
        disk: {bus: ` + bus + `}
  volumes:
  - name: scratch
    emptyDisk: {capacity: 1Mi}
`
}

// vmDoc is a small valid VM, its template's first disk on bus.
func vmDoc(name, strategy, bus string) string {
	return `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: ` + name + `
spec:
  runStrategy: ` + strategy + `
  template:
    metadata:
      labels: {app: ` + name + `}
      annotations: {note: kept}
    spec:
      domain:
        memory: {guest: 64Mi}
        devices:
          disks:
          - name: scratch
            disk: {bus: ` + bus + `}
      volumes:
      - name: scratch
        emptyDisk: {capacity: 1Mi}
`
}

// testRefusesInvalid: kubectl apply of a VMI or a VM that KubeVirt's
// admission refuses is refused by the webhooks, each problem printed with
// its field path (a VM's at its place in the VM), and nothing is created.
func testRefusesInvalid(t *testing.T, w *world) {
	ns := w.namespace(t, "invalid")
	floppy := `spec.domain.devices.disks[0].disk.bus: Unsupported value: "floppy": supported values: "virtio", "scsi", "sata", "usb"`
	noMemory := `spec.domain.memory.guest: Required value: no memory requested: set one of spec.domain.memory.guest, spec.domain.memory.hugepages.pageSize or spec.domain.resources.requests.memory`
	// kubectl prints one problem on the line, several as a list.
	cases := []struct {
		name, doc, resource, want string
	}{
		{"vmi", vmiDoc("bad", "floppy"), "vmi", "The request is invalid: " + floppy + "\n"},
		{"vmi, two problems", strings.Replace(vmiDoc("bad", "floppy"), "    memory: {guest: 64Mi}\n", "", 1), "vmi",
			"The request is invalid: \n* " + noMemory + "\n* " + floppy + "\n"},
		{"vm", vmDoc("bad", "Always", "floppy"), "vm", "The request is invalid: spec.template." + floppy + "\n"},
		{"vm run strategy", strings.Replace(vmDoc("bad", "Always", "virtio"), "runStrategy: Always", "runStrategy: Sometimes", 1), "vm",
			"The request is invalid: spec.runStrategy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"RerunOnFailure\", \"Manual\", \"Halted\", \"Once\"\n"},
	}
	for _, c := range cases {
		_, stderr, err := w.apply(t, ns, c.doc)
		if err == nil || stderr != c.want {
			t.Errorf("%s: kubectl apply: %v, stderr:\n%q\nwant:\n%q", c.name, err, stderr, c.want)
		}
		if _, stderr, err := w.c.Kubectl(context.Background(), "get", "-n", ns, c.resource, "bad"); err == nil || !strings.Contains(stderr, `"bad" not found`) {
			t.Errorf("%s: the refused object exists: %v %s", c.name, err, stderr)
		}
	}
}

// testDefaultsAndKeepsStatus: a VMI is created with KubeVirt's admission
// defaults (the library's api.Default), its finalizer and phase Pending;
// then what node agents write — status, finalizers, the node binding
// label — goes through untouched, and a change of its spec is refused.
func testDefaultsAndKeepsStatus(t *testing.T, w *world) {
	ns := w.namespace(t, "defaults")
	if stdout, stderr, err := w.apply(t, ns, vmiDoc("tiny", "virtio")); err != nil {
		t.Fatalf("kubectl apply: %v\n%s%s", err, stdout, stderr)
	}
	vmi := w.vmi(t, ns, "tiny")
	expected, err := api.Decode([]byte(vmiDoc("tiny", "virtio")))
	if err != nil {
		t.Fatal(err)
	}
	expected.Namespace = ns
	api.Default(expected, api.ClusterConfig{})
	if diff := cmp.Diff(expected.Spec, vmi.Spec); diff != "" {
		t.Errorf("stored spec is not api.Default's (-want +stored):\n%s", diff)
	}
	if !slices.Equal(vmi.Finalizers, []string{v1.VirtualMachineInstanceFinalizer}) {
		t.Errorf("finalizers %v, want KubeVirt's %s", vmi.Finalizers, v1.VirtualMachineInstanceFinalizer)
	}
	if vmi.Status.Phase != v1.Pending || len(vmi.Status.PhaseTransitionTimestamps) != 1 {
		t.Errorf("status %+v, want phase Pending with its transition", vmi.Status)
	}

	ctx := context.Background()
	// What a node agent writes: a merge patch of labels, finalizers and
	// status, with the resourceVersion as precondition.
	orig := vmi.DeepCopy()
	metav1.SetMetaDataLabel(&vmi.ObjectMeta, v1.NodeNameLabel, "node01")
	vmi.Finalizers = append(vmi.Finalizers, "vmi2libvirt.github.com/nodeagent")
	vmi.Status.Phase = v1.Running
	vmi.Status.NodeName = "node01"
	vmi.Status.Conditions = []v1.VirtualMachineInstanceCondition{{Type: v1.VirtualMachineInstanceReady, Status: k8sv1.ConditionTrue}}
	if err := w.cl.Patch(ctx, vmi, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		t.Fatalf("the agent's patch: %v", err)
	}
	got := w.vmi(t, ns, "tiny")
	if got.Status.Phase != v1.Running || got.Status.NodeName != "node01" || got.Labels[v1.NodeNameLabel] != "node01" || len(got.Finalizers) != 2 || len(got.Status.Conditions) != 1 {
		t.Errorf("after the agent's patch: labels %v finalizers %v status %+v", got.Labels, got.Finalizers, got.Status)
	}

	// A spec change: refused, with its path.
	changed := got.DeepCopy()
	changed.Spec.Domain.Devices.Disks[0].Disk.Bus = v1.DiskBusSATA
	err = w.cl.Update(ctx, changed)
	if err == nil || !strings.Contains(err.Error(), `admission webhook "virtualmachineinstances-update-validator.kubevirt.io" denied the request: spec: Forbidden: update of VMI object is restricted`) {
		t.Errorf("spec update: %v, want it refused", err)
	}
	if after := w.vmi(t, ns, "tiny"); after.Spec.Domain.Devices.Disks[0].Disk.Bus != v1.DiskBusVirtio {
		t.Errorf("the refused spec change was stored: bus %s", after.Spec.Domain.Devices.Disks[0].Disk.Bus)
	}
}

// vmi reads a VMI from the API server; nil when there is none.
func (w *world) vmi(t *testing.T, ns, name string) *v1.VirtualMachineInstance {
	t.Helper()
	var vmi v1.VirtualMachineInstance
	err := w.cl.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &vmi)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return &vmi
}

// vm reads a VM from the API server; nil when there is none.
func (w *world) vm(t *testing.T, ns, name string) *v1.VirtualMachine {
	t.Helper()
	var vm v1.VirtualMachine
	err := w.cl.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &vm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return &vm
}

// waitVM polls the VM (and its VMI) until ok holds, and returns both; it
// fails the test after a minute with what it saw last.
func (w *world) waitVM(t *testing.T, ns, name, what string, ok func(*v1.VirtualMachine, *v1.VirtualMachineInstance) bool) (*v1.VirtualMachine, *v1.VirtualMachineInstance) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		vm, vmi := w.vm(t, ns, name), w.vmi(t, ns, name)
		if ok(vm, vmi) {
			return vm, vmi
		}
		if time.Now().After(deadline) {
			t.Fatalf("VM %s/%s: not %s within a minute; VM %+v; VMI %+v", ns, name, what, vm, vmi)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// patchVM merge-patches the VM (its status when status is true).
func (w *world) patchVM(t *testing.T, ns, name, patch string, status bool) {
	t.Helper()
	vm := &v1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	p := client.RawPatch(types.MergePatchType, []byte(patch))
	var err error
	if status {
		err = w.cl.Status().Patch(context.Background(), vm, p)
	} else {
		err = w.cl.Patch(context.Background(), vm, p)
	}
	if err != nil {
		t.Fatalf("patch %s of VM %s: %v", patch, name, err)
	}
}

// condition returns the VM's condition of type typ, or nil.
func condition(vm *v1.VirtualMachine, typ v1.VirtualMachineConditionType) *v1.VirtualMachineCondition {
	for i := range vm.Status.Conditions {
		if vm.Status.Conditions[i].Type == typ {
			return &vm.Status.Conditions[i]
		}
	}
	return nil
}

// testVMLifecycle: the VM controller without a node agent (its VMIs never
// run): Halted has no VMI; Always creates the VMI from the template as
// KubeVirt does, with its revision and generations; a change of the run
// strategy alone moves the VMI to the new generation, one of the template
// asks for a restart; a restart through stateChangeRequests (stop with the
// VMI's UID, then start) replaces the VMI by a new one; a stop leaves
// none; deleting the VM deletes its VMI and revisions.
func testVMLifecycle(t *testing.T, w *world) {
	ns := w.namespace(t, "lifecycle")
	ctx := context.Background()
	if stdout, stderr, err := w.apply(t, ns, vmDoc("vm1", "Halted", "virtio")); err != nil || stdout != "virtualmachine.kubevirt.io/vm1 created\n" {
		t.Fatalf("kubectl apply: %v\n%s%s", err, stdout, stderr)
	}

	vm, _ := w.waitVM(t, ns, "vm1", "Stopped", func(vm *v1.VirtualMachine, _ *v1.VirtualMachineInstance) bool {
		return vm.Status.PrintableStatus == v1.VirtualMachineStatusStopped
	})
	if w.vmi(t, ns, "vm1") != nil {
		t.Fatal("a Halted VM has a VMI")
	}
	if !slices.Contains(vm.Finalizers, v1.VirtualMachineControllerFinalizer) || vm.Annotations[v1.ControllerAPILatestVersionObservedAnnotation] != "v1" {
		t.Errorf("VM finalizers %v annotations %v: want KubeVirt's controller finalizer and observed API version", vm.Finalizers, vm.Annotations)
	}
	if c := condition(vm, v1.VirtualMachineReady); c == nil || c.Status != k8sv1.ConditionFalse || c.Reason != "VMINotExists" {
		t.Errorf("Ready condition %+v, want False VMINotExists", c)
	}
	tpl := vm.Spec.Template.Spec
	if tpl.Architecture != "amd64" || tpl.Domain.Machine == nil || tpl.Domain.Machine.Type != "q35" {
		t.Errorf("template architecture %q machine %+v: want the VM mutator's amd64, q35", tpl.Architecture, tpl.Domain.Machine)
	}

	// Started: the VMI as KubeVirt's VM controller makes it.
	w.patchVM(t, ns, "vm1", `{"spec":{"runStrategy":"Always"}}`, false)
	vm, vmi := w.waitVM(t, ns, "vm1", "Starting with its VMI", func(vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance) bool {
		return vmi != nil && vm.Status.Created && vm.Status.PrintableStatus == v1.VirtualMachineStatusStarting
	})
	ref := metav1.GetControllerOf(vmi)
	if ref == nil || ref.UID != vm.UID || ref.Kind != "VirtualMachine" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("VMI controller reference %+v, want the VM's", ref)
	}
	if want := []string{v1.VirtualMachineControllerFinalizer, v1.VirtualMachineInstanceFinalizer}; !slices.Equal(vmi.Finalizers, want) {
		t.Errorf("VMI finalizers %v, want %v", vmi.Finalizers, want)
	}
	if vmi.Labels["app"] != "vm1" || vmi.Annotations["note"] != "kept" || vmi.Annotations[v1.VirtualMachineGenerationAnnotation] != "2" {
		t.Errorf("VMI labels %v annotations %v: want the template's and kubevirt.io/vm-generation 2", vmi.Labels, vmi.Annotations)
	}
	if got := vmi.Spec.Domain.Firmware.UUID; got != api.VMFirmwareUUID("vm1") {
		t.Errorf("VMI firmware UUID %s, want KubeVirt's for the VM's name, %s", got, api.VMFirmwareUUID("vm1"))
	}
	revision := "revision-start-vm-" + string(vm.UID) + "-2"
	if vmi.Status.VirtualMachineRevisionName != revision {
		t.Errorf("VMI revision %q, want %q", vmi.Status.VirtualMachineRevisionName, revision)
	}
	var cr appsv1.ControllerRevision
	if err := w.cl.Get(ctx, types.NamespacedName{Namespace: ns, Name: revision}, &cr); err != nil || cr.Revision != 2 {
		t.Errorf("revision %s: %v (revision %d)", revision, err, cr.Revision)
	}
	if vm.Status.ObservedGeneration != 2 || vm.Status.DesiredGeneration != 2 || vm.Status.RunStrategy != v1.RunStrategyAlways {
		t.Errorf("VM status generations %d/%d runStrategy %q, want 2/2 Always", vm.Status.ObservedGeneration, vm.Status.DesiredGeneration, vm.Status.RunStrategy)
	}
	if c := condition(vm, v1.VirtualMachineReady); c == nil || c.Reason != "VMIConditionMissing" {
		t.Errorf("Ready condition %+v, want False VMIConditionMissing (no agent wrote it)", c)
	}

	// The run strategy alone: the VMI takes the new generation.
	w.patchVM(t, ns, "vm1", `{"spec":{"runStrategy":"Manual"}}`, false)
	w.waitVM(t, ns, "vm1", "at generation 3", func(vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance) bool {
		return vm.Status.ObservedGeneration == 3 && vm.Status.DesiredGeneration == 3 && vmi.Annotations[v1.VirtualMachineGenerationAnnotation] == "3"
	})
	// The template: a restart is required, the VMI stays at 3.
	w.patchVM(t, ns, "vm1", `{"spec":{"template":{"spec":{"domain":{"memory":{"guest":"96Mi"}}}}}}`, false)
	vm, vmi = w.waitVM(t, ns, "vm1", "RestartRequired", func(vm *v1.VirtualMachine, _ *v1.VirtualMachineInstance) bool {
		return condition(vm, v1.VirtualMachineRestartRequired) != nil && vm.Status.DesiredGeneration == 4
	})
	if vm.Status.ObservedGeneration != 3 || condition(vm, v1.VirtualMachineRestartRequired).Message != "a non-live-updatable field was changed in the template spec" {
		t.Errorf("after a template change: observedGeneration %d, RestartRequired %+v", vm.Status.ObservedGeneration, condition(vm, v1.VirtualMachineRestartRequired))
	}

	// Restart as virt-api writes it: stop this VMI, then start.
	old := vmi.UID
	w.patchVM(t, ns, "vm1", fmt.Sprintf(`{"status":{"stateChangeRequests":[{"action":"Stop","uid":%q},{"action":"Start"}]}}`, old), true)
	vm, vmi = w.waitVM(t, ns, "vm1", "restarted", func(vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance) bool {
		return vmi != nil && vmi.UID != old && len(vm.Status.StateChangeRequests) == 0 && vm.Status.ObservedGeneration == 4
	})
	if condition(vm, v1.VirtualMachineRestartRequired) != nil || vmi.Spec.Domain.Memory.Guest.String() != "96Mi" {
		t.Errorf("after the restart: RestartRequired %+v, memory %s (want none, the new template's 96Mi)", condition(vm, v1.VirtualMachineRestartRequired), vmi.Spec.Domain.Memory.Guest)
	}
	var revisions appsv1.ControllerRevisionList
	if err := w.cl.List(ctx, &revisions, client.InNamespace(ns)); err != nil || len(revisions.Items) != 1 || revisions.Items[0].Revision != 4 {
		t.Errorf("revisions after the restart: %v %+v, want the one of generation 4", err, revisions.Items)
	}

	// Stop.
	w.patchVM(t, ns, "vm1", fmt.Sprintf(`{"status":{"stateChangeRequests":[{"action":"Stop","uid":%q}]}}`, vmi.UID), true)
	vm, _ = w.waitVM(t, ns, "vm1", "Stopped without a VMI", func(vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance) bool {
		return vmi == nil && vm.Status.PrintableStatus == v1.VirtualMachineStatusStopped && len(vm.Status.StateChangeRequests) == 0
	})
	if vm.Status.Created || vm.Status.Ready {
		t.Errorf("stopped VM: created %t ready %t", vm.Status.Created, vm.Status.Ready)
	}

	// Start again, then delete the VM: its VMI and revisions go with it.
	w.patchVM(t, ns, "vm1", `{"status":{"stateChangeRequests":[{"action":"Start"}]}}`, true)
	w.waitVM(t, ns, "vm1", "started", func(_ *v1.VirtualMachine, vmi *v1.VirtualMachineInstance) bool { return vmi != nil })
	w.kubectl(t, "delete", "-n", ns, "vm", "vm1", "--timeout=1m")
	if w.vm(t, ns, "vm1") != nil || w.vmi(t, ns, "vm1") != nil {
		t.Error("the VM or its VMI is left after kubectl delete vm")
	}
	if err := w.cl.List(ctx, &revisions, client.InNamespace(ns)); err != nil || len(revisions.Items) != 0 {
		t.Errorf("revisions after the VM's deletion: %v %+v, want none", err, revisions.Items)
	}
}
