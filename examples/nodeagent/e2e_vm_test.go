package main

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// bootTimeout is how long a test guest may take from its VMI's creation
// until it runs (under emulation, on a busy 2-core machine).
const bootTimeout = 3 * time.Minute

// TestE2EVirtualMachine runs VirtualMachines through the control plane
// (its VM controller and webhooks, a process of its own) and one node
// agent, against one test cluster and the real libvirtd; each subtest has
// a namespace of its own.
func TestE2EVirtualMachine(t *testing.T) {
	w := newVMWorld(t)
	// The run strategies side by side (the agent runs their guests at
	// once), then the control plane killed, alone.
	t.Run("RunStrategies", func(t *testing.T) {
		for _, c := range []struct {
			name string
			test func(*testing.T, *vmWorld)
		}{
			{"HaltedStartStop", testHaltedStartStop},
			{"AlwaysRestartsPoweredOff", testAlwaysRestartsPoweredOff},
			{"RerunOnFailure", testRerunOnFailure},
			{"Once", testOnce},
			{"ManualRestart", testManualRestart},
		} {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				c.test(t, w)
			})
		}
	})
	t.Run("KilledMidRestart", func(t *testing.T) { testKilledMidRestart(t, w) })
	w.agent.stop(t, os.Interrupt)
}

// testHaltedStartStop: `kubectl apply -f vm.yaml` with runStrategy Halted
// runs nothing; patching it to Always (what virtctl start does to a
// Halted VM) gives a VMI that runs on the agent's node — VM Running and
// ready, as `kubectl get vm` shows — and back to Halted stops it: the
// guest shuts down, the VMI and its domain go, the VM is Stopped.
func testHaltedStartStop(t *testing.T, w *vmWorld) {
	ns := w.namespace(t, "halted")
	log := w.recordVMIs(t, ns)
	stdout, stderr, err := w.applyYAML(t, w.guestVM(ns, "vm1", virtv1.RunStrategyHalted, 30, testguest.ActionACPI))
	if err != nil || stdout != "virtualmachine.kubevirt.io/vm1 created\n" {
		t.Fatalf("kubectl apply: %v\n%s%s", err, stdout, stderr)
	}
	w.waitVM(t, ns, "vm1", "Stopped", time.Minute, func(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) bool {
		return stoppedVM(vm, vmi) && slices.Contains(vm.Finalizers, virtv1.VirtualMachineControllerFinalizer)
	})
	if got := log.created(); len(got) != 0 {
		t.Fatalf("a Halted VM made VMIs %v", got)
	}

	w.setStrategy(t, ns, "vm1", virtv1.RunStrategyAlways)
	vm, vmi := w.waitVM(t, ns, "vm1", "Running", bootTimeout, runningVM)
	if vmi.Status.NodeName != w.node || vmi.Labels[virtv1.NodeNameLabel] != w.node {
		t.Errorf("VMI on node %q (label %q), want the agent's %s", vmi.Status.NodeName, vmi.Labels[virtv1.NodeNameLabel], w.node)
	}
	if c := vmCondition(vm, virtv1.VirtualMachineReady); c == nil || c.Status != k8sv1.ConditionTrue {
		t.Errorf("VM Ready condition %+v, want True from the VMI's", c)
	}
	if !vm.Status.Created || vm.Status.ObservedGeneration != 2 || vm.Status.DesiredGeneration != 2 {
		t.Errorf("VM status created %t generations %d/%d, want created, 2/2", vm.Status.Created, vm.Status.ObservedGeneration, vm.Status.DesiredGeneration)
	}
	stdout, stderr, err = w.cluster.Kubectl(context.Background(), "get", "vm", "-n", ns, "vm1", "--no-headers")
	if f := strings.Fields(stdout); err != nil || len(f) != 4 || f[0] != "vm1" || f[2] != "Running" || f[3] != "True" {
		t.Errorf("kubectl get vm: %v %q %s, want vm1 AGE Running True", err, stdout, stderr)
	}
	if got := w.vmEvents(t, vm); got["SuccessfulCreate"] != 1 {
		t.Errorf("VM Events %v, want SuccessfulCreate once", got)
	}
	waitConsole(t, w.dir, ns, "vm1", "testguest: waiting for the ACPI power button", bootTimeout)

	w.setStrategy(t, ns, "vm1", virtv1.RunStrategyHalted)
	vm, _ = w.waitVM(t, ns, "vm1", "Stopped", 2*time.Minute, stoppedVM)
	if exists, _, _ := w.domain(t, ns, "vm1"); exists {
		t.Error("the domain is still defined after the VM stopped")
	}
	if got := w.vmEvents(t, vm); got["SuccessfulDelete"] != 1 {
		t.Errorf("VM Events %v, want SuccessfulDelete once", got)
	}
	if got := log.created(); len(got) != 1 || !log.ran(got[0]) {
		t.Errorf("VMIs created %v, want one that ran", got)
	}
	w.deleteVM(t, ns, "vm1")
}

// testAlwaysRestartsPoweredOff: with runStrategy Always, a guest that
// powers itself off (its VMI Succeeded) is replaced by a new VMI, which
// boots a new guest.
func testAlwaysRestartsPoweredOff(t *testing.T, w *vmWorld) {
	ns := w.namespace(t, "always")
	log := w.recordVMIs(t, ns)
	w.createVM(t, w.guestVM(ns, "vm1", virtv1.RunStrategyAlways, 30, testguest.ActionPowerOff))
	uids := log.waitCreated(t, 2, 2*bootTimeout)
	waitRan(t, log, uids[1], bootTimeout)
	if !log.ran(uids[0]) || !log.seen(uids[0], virtv1.Succeeded) {
		t.Errorf("first VMI seen in phases %v, want Running then Succeeded", log.phasesOf(uids[0]))
	}
	vm := w.getVM(t, ns, "vm1")
	if vm.Status.StartFailure != nil {
		t.Errorf("startFailure %+v after VMIs that ran, want none", vm.Status.StartFailure)
	}
	w.setStrategy(t, ns, "vm1", virtv1.RunStrategyHalted)
	w.waitVM(t, ns, "vm1", "Stopped", 2*time.Minute, stoppedVM)
	w.deleteVM(t, ns, "vm1")
}

// waitRan waits until the VMI uid was seen Running.
func waitRan(t testing.TB, log *vmiLog, uid types.UID, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !log.ran(uid) {
		if time.Now().After(deadline) {
			t.Fatalf("VMI %s not Running within %s", uid, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// testRerunOnFailure: with runStrategy RerunOnFailure, a guest that powers
// itself off (Succeeded) is not started again — its VMI is removed and the
// VM is Stopped —, and one whose QEMU is killed (Failed) is: a new VMI
// boots.
func testRerunOnFailure(t *testing.T, w *vmWorld) {
	ns := w.namespace(t, "rerun")
	log := w.recordVMIs(t, ns)

	w.createVM(t, w.guestVM(ns, "succeeds", virtv1.RunStrategyRerunOnFailure, 30, testguest.ActionPowerOff))
	vm, _ := w.waitVM(t, ns, "succeeds", "Stopped after its guest powered off", 2*bootTimeout, func(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) bool {
		return stoppedVM(vm, vmi) && len(log.created()) == 1
	})
	if len(vm.Status.StateChangeRequests) != 0 {
		t.Errorf("state change requests %+v after a Succeeded VMI, want none", vm.Status.StateChangeRequests)
	}
	time.Sleep(settle)
	if got := log.created(); len(got) != 1 || !log.seen(got[0], virtv1.Succeeded) {
		t.Errorf("VMIs %v: want one, that Succeeded, and no other", got)
	}

	w.createVM(t, w.guestVM(ns, "fails", virtv1.RunStrategyRerunOnFailure, 30, testguest.ActionACPI))
	_, first := w.waitVM(t, ns, "fails", "Running", bootTimeout, runningVM)
	waitConsole(t, w.dir, ns, "fails", "testguest: waiting for the ACPI power button", bootTimeout)
	killQEMU(t, ns, "fails")
	_, second := w.waitVM(t, ns, "fails", "Running again", 2*bootTimeout, func(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) bool {
		return runningVM(vm, vmi) && vmi.UID != first.UID
	})
	if !log.seen(first.UID, virtv1.Failed) {
		t.Errorf("the killed guest's VMI was seen in phases %v, want Failed", log.phasesOf(first.UID))
	}
	if got := log.created(); len(got) != 3 || got[2] != second.UID {
		t.Errorf("VMIs created %v, want exactly the replacement after the failed one", got)
	}
	waitConsole(t, w.dir, ns, "fails", "testguest: waiting for the ACPI power button", bootTimeout)
	w.setStrategy(t, ns, "fails", virtv1.RunStrategyHalted)
	w.waitVM(t, ns, "fails", "Stopped", 2*time.Minute, stoppedVM)
	w.deleteVM(t, ns, "fails")
	w.deleteVM(t, ns, "succeeds")
}

// testOnce: with runStrategy Once, the VMI runs once and stays as it ended
// (Succeeded): the VM is Stopped, with its VMI, and no other starts.
func testOnce(t *testing.T, w *vmWorld) {
	ns := w.namespace(t, "once")
	log := w.recordVMIs(t, ns)
	w.createVM(t, w.guestVM(ns, "vm1", virtv1.RunStrategyOnce, 30, testguest.ActionPowerOff))
	// Once the VMI ended, the VM controller records it and lets it go
	// (its finalizer), the VMI controller too (KubeVirt's foreground one).
	vm, _ := w.waitVM(t, ns, "vm1", "Stopped with its Succeeded VMI", 2*bootTimeout, func(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) bool {
		return vmi != nil && vmi.Status.Phase == virtv1.Succeeded && vm.Status.PrintableStatus == virtv1.VirtualMachineStatusStopped &&
			!slices.Contains(vmi.Finalizers, virtv1.VirtualMachineControllerFinalizer) && !slices.Contains(vmi.Finalizers, virtv1.VirtualMachineInstanceFinalizer)
	})
	if !vm.Status.Created || vm.Status.Ready {
		t.Errorf("VM created %t ready %t: want its ended VMI kept (created), not ready", vm.Status.Created, vm.Status.Ready)
	}
	time.Sleep(settle)
	if got := log.created(); len(got) != 1 {
		t.Errorf("VMIs created %v, want one", got)
	}
	w.deleteVM(t, ns, "vm1")
}

// testManualRestart: with runStrategy Manual, nothing starts until a start
// request; a restart as virt-api writes it (stop naming the running VMI's
// UID, then start) shuts its guest down and boots a new VMI, once; a stop
// request stops it.
func testManualRestart(t *testing.T, w *vmWorld) {
	ns := w.namespace(t, "manual")
	log := w.recordVMIs(t, ns)
	w.createVM(t, w.guestVM(ns, "vm1", virtv1.RunStrategyManual, 30, testguest.ActionACPI))
	w.waitVM(t, ns, "vm1", "Stopped", time.Minute, stoppedVM)

	w.requestStates(t, ns, "vm1", startRequest)
	_, first := w.waitVM(t, ns, "vm1", "Running", bootTimeout, runningVM)
	waitConsole(t, w.dir, ns, "vm1", "testguest: waiting for the ACPI power button", bootTimeout)

	w.requestStates(t, ns, "vm1", stopRequest(first.UID), startRequest)
	vm, second := w.waitVM(t, ns, "vm1", "restarted", 2*bootTimeout, func(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) bool {
		return runningVM(vm, vmi) && vmi.UID != first.UID && len(vm.Status.StateChangeRequests) == 0
	})
	waitConsole(t, w.dir, ns, "vm1", "testguest: waiting for the ACPI power button", bootTimeout)
	if got := log.created(); len(got) != 2 || got[1] != second.UID {
		t.Errorf("VMIs created %v, want the first and one new one", got)
	}
	if n := w.boots(ns, "vm1"); n != 1 {
		t.Errorf("the new VMI's guest booted %d times, want once", n)
	}
	if !log.seen(first.UID, virtv1.Succeeded) {
		t.Errorf("the first VMI was seen in phases %v, want Succeeded (shut down on the ACPI button)", log.phasesOf(first.UID))
	}
	if got := w.vmEvents(t, vm); got["SuccessfulCreate"] != 2 || got["SuccessfulDelete"] != 1 {
		t.Errorf("VM Events %v, want SuccessfulCreate twice and SuccessfulDelete once", got)
	}

	w.requestStates(t, ns, "vm1", stopRequest(second.UID))
	w.waitVM(t, ns, "vm1", "Stopped", 2*time.Minute, func(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) bool {
		return stoppedVM(vm, vmi) && len(vm.Status.StateChangeRequests) == 0
	})
	w.deleteVM(t, ns, "vm1")
}

// testKilledMidRestart: the control plane is SIGKILLed twice during a
// restart — while the old VMI is being deleted (its guest ignores the ACPI
// button, so that takes its grace period), and as soon as the new VMI
// exists — and started again each time: the VM converges to one new VMI,
// whose guest boots once, and the state change requests are done. No
// other VMI was ever created.
func testKilledMidRestart(t *testing.T, w *vmWorld) {
	ns := w.namespace(t, "killed")
	log := w.recordVMIs(t, ns)
	w.createVM(t, w.guestVM(ns, "vm1", virtv1.RunStrategyAlways, 5, testguest.ActionIgnore))
	_, first := w.waitVM(t, ns, "vm1", "Running", bootTimeout, runningVM)
	waitConsole(t, w.dir, ns, "vm1", "testguest: ignoring ACPI", bootTimeout)

	w.requestStates(t, ns, "vm1", stopRequest(first.UID), startRequest)
	w.waitVMI(t, ns, "vm1", "deleting", time.Minute, func(vmi *virtv1.VirtualMachineInstance) bool {
		return vmi != nil && vmi.UID == first.UID && vmi.DeletionTimestamp != nil
	})
	w.cp.Stop(t, os.Kill)
	w.cp.Restart(t)

	uids := log.waitCreated(t, 2, 2*bootTimeout)
	w.cp.Stop(t, os.Kill)
	w.cp.Restart(t)

	vm, second := w.waitVM(t, ns, "vm1", "Running after the restart", 2*bootTimeout, func(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) bool {
		return runningVM(vm, vmi) && vmi.UID != first.UID && len(vm.Status.StateChangeRequests) == 0
	})
	waitConsole(t, w.dir, ns, "vm1", "testguest: ignoring ACPI", bootTimeout)
	time.Sleep(settle)
	if got := log.created(); len(got) != 2 || got[0] != first.UID || got[1] != second.UID || uids[1] != second.UID {
		t.Errorf("VMIs created %v, want exactly the first and the new one", got)
	}
	if n := w.boots(ns, "vm1"); n != 1 {
		t.Errorf("the new VMI's guest booted %d times, want once", n)
	}
	if vm.Status.ObservedGeneration != vm.Generation {
		t.Errorf("observedGeneration %d, generation %d", vm.Status.ObservedGeneration, vm.Generation)
	}
	w.setStrategy(t, ns, "vm1", virtv1.RunStrategyHalted)
	w.waitVM(t, ns, "vm1", "Stopped", 2*time.Minute, stoppedVM)
	w.deleteVM(t, ns, "vm1")
}

// vmCondition returns the VM's condition of type typ, or nil.
func vmCondition(vm *virtv1.VirtualMachine, typ virtv1.VirtualMachineConditionType) *virtv1.VirtualMachineCondition {
	for i := range vm.Status.Conditions {
		if vm.Status.Conditions[i].Type == typ {
			return &vm.Status.Conditions[i]
		}
	}
	return nil
}
