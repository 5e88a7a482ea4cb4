package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// TestE2EVirtctlVM walks a VirtualMachine through the real kubectl and
// virtctl, with the VM controller acting on what virtctl writes, as the
// README's "On Kubernetes" does: `kubectl apply` of a Halted VM runs
// nothing; `virtctl start` → its VMI Running on the agent's node, the VM
// Running; `virtctl restart` → a new VMI (a new UID), its guest booted
// once; `virtctl addvolume` of a claim → the VM's template has it, the VM
// controller carries it to the running VMI (through KubeVirt's hotplug
// admission), the guest sees the disk, the VM needs no restart;
// `virtctl removevolume` → gone again; `virtctl stop` → the VM Stopped,
// no VMI, no domain.
func TestE2EVirtctlVM(t *testing.T) {
	ns := uniqueName("virtctlvm")
	w, vw := newVirtctlVMWorldWith(t, volumeClaimFlags(t, ns)...)
	if err := w.client.Create(context.Background(), &k8sv1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	log := vw.recordVMIs(t, ns)
	stdout, stderr, err := vw.applyYAML(t, vw.guestVM(ns, "vm1", virtv1.RunStrategyHalted, 30, testguest.ActionACPI))
	if err != nil || stdout != "virtualmachine.kubevirt.io/vm1 created\n" {
		t.Fatalf("kubectl apply: %v\n%s%s", err, stdout, stderr)
	}
	vw.waitVM(t, ns, "vm1", "Stopped", time.Minute, stoppedVM)

	if out := w.mustRun(t, "-n", ns, "start", "vm1"); !strings.Contains(out, "VM vm1 was scheduled to start") {
		t.Errorf("virtctl start printed %q", out)
	}
	vm, first := vw.waitVM(t, ns, "vm1", "Running", bootTimeout, runningVM)
	if first.Status.NodeName != w.node {
		t.Errorf("VMI on node %q, want the agent's %s", first.Status.NodeName, w.node)
	}
	if s, _ := vm.RunStrategy(); s != virtv1.RunStrategyAlways {
		t.Errorf("run strategy after virtctl start: %s, want Always", s)
	}
	waitConsole(t, w.dir, ns, "vm1", testguest.ShellMarker, bootTimeout)

	if out := w.mustRun(t, "-n", ns, "restart", "vm1"); !strings.Contains(out, "VM vm1 was scheduled to restart") {
		t.Errorf("virtctl restart printed %q", out)
	}
	_, second := vw.waitVM(t, ns, "vm1", "Running again", 2*bootTimeout, func(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) bool {
		return runningVM(vm, vmi) && vmi.UID != first.UID && len(vm.Status.StateChangeRequests) == 0
	})
	waitConsole(t, w.dir, ns, "vm1", testguest.ShellMarker, bootTimeout)
	if n := vw.boots(ns, "vm1"); n != 1 {
		t.Errorf("the new VMI's guest booted %d times, want once", n)
	}
	if got := log.created(); len(got) != 2 || got[0] != first.UID || got[1] != second.UID {
		t.Errorf("VMIs created %v, want %s then %s", got, first.UID, second.UID)
	}
	if !log.seen(first.UID, virtv1.Succeeded) {
		t.Errorf("the first VMI was seen in phases %v, want Succeeded (shut down on the ACPI button)", log.phasesOf(first.UID))
	}

	createClaim(t, w.world, ns)
	hotplugRoundTrip(t, w, ns, "vm1", func() {
		vm := w.getVM(t, ns, "vm1")
		if !strings.Contains(fmt.Sprint(vm.Spec.Template.Spec.Volumes), volumeClaim) {
			t.Errorf("the VM's template after addvolume has volumes %+v, want %s", vm.Spec.Template.Spec.Volumes, volumeClaim)
		}
		for _, c := range vm.Status.Conditions {
			if c.Type == virtv1.VirtualMachineRestartRequired {
				t.Errorf("the VM after addvolume: %s %s (%s), want no restart required", c.Type, c.Status, c.Message)
			}
		}
	})

	if out := w.mustRun(t, "-n", ns, "stop", "vm1"); !strings.Contains(out, "VM vm1 was scheduled to stop") {
		t.Errorf("virtctl stop printed %q", out)
	}
	vw.waitVM(t, ns, "vm1", "Stopped", 2*time.Minute, stoppedVM)
	if exists, _, _ := w.domain(t, ns, "vm1"); exists {
		t.Error("the domain is still defined after virtctl stop")
	}
	if got := log.created(); len(got) != 2 {
		t.Errorf("VMIs created %v, want the two only", got)
	}
	vw.deleteVM(t, ns, "vm1")
}
