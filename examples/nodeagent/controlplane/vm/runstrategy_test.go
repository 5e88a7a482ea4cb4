package vm

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// vmWith is a VM of run strategy s, with the state change requests reqs
// and the run strategy its status recorded (recorded).
func vmWith(s v1.VirtualMachineRunStrategy, recorded v1.VirtualMachineRunStrategy, reqs ...v1.VirtualMachineStateChangeRequest) *v1.VirtualMachine {
	vm := &v1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm", UID: "vm-uid", Generation: 1}}
	vm.Spec.RunStrategy = &s
	vm.Status.RunStrategy = recorded
	vm.Status.StateChangeRequests = reqs
	return vm
}

// vmiIn is the VMI "vmi-uid" in phase p, being deleted when deleting.
func vmiIn(p v1.VirtualMachineInstancePhase, deleting bool) *v1.VirtualMachineInstance {
	vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm", UID: "vmi-uid"}}
	vmi.Status.Phase = p
	if deleting {
		t := metav1.NewTime(now)
		vmi.DeletionTimestamp = &t
	}
	return vmi
}

func stopOf(uid types.UID) v1.VirtualMachineStateChangeRequest {
	return v1.VirtualMachineStateChangeRequest{Action: v1.StopRequest, UID: &uid}
}

var startReq = v1.VirtualMachineStateChangeRequest{Action: v1.StartRequest}

// TestDecide checks each run strategy's decision against KubeVirt's
// syncRunStrategy (pkg/virt-controller/watch/vm/vm.go, v1.8.0), read case
// by case.
func TestDecide(t *testing.T) {
	const (
		always = v1.RunStrategyAlways
		rerun  = v1.RunStrategyRerunOnFailure
		manual = v1.RunStrategyManual
		halted = v1.RunStrategyHalted
		once   = v1.RunStrategyOnce
	)
	backingOff := vmWith(always, always)
	retry := metav1.NewTime(now.Add(30 * time.Second))
	backingOff.Status.StartFailure = &v1.VirtualMachineStartFailure{ConsecutiveFailCount: 1, RetryAfterTimestamp: &retry}
	rerunBackingOff := backingOff.DeepCopy()
	rerunBackingOff.Spec.RunStrategy = ptrTo(rerun)
	rerunBackingOff.Status.StateChangeRequests = []v1.VirtualMachineStateChangeRequest{startReq}
	cases := []struct {
		name  string
		vm    *v1.VirtualMachine
		vmi   *v1.VirtualMachineInstance
		want  action
		after time.Duration
	}{
		{"always, none", vmWith(always, ""), nil, start, 0},
		{"always, none, backing off", backingOff, nil, none, 30 * time.Second},
		{"always, running", vmWith(always, always), vmiIn(v1.Running, false), none, 0},
		{"always, pending", vmWith(always, always), vmiIn(v1.Pending, false), none, 0},
		{"always, succeeded", vmWith(always, always), vmiIn(v1.Succeeded, false), stop, 0},
		{"always, failed", vmWith(always, always), vmiIn(v1.Failed, false), stop, 0},
		{"always, failed, deleting", vmWith(always, always), vmiIn(v1.Failed, true), none, 0},
		{"always, stop request for it", vmWith(always, always, stopOf("vmi-uid"), startReq), vmiIn(v1.Running, false), stop, 0},
		{"always, stop request for another", vmWith(always, always, stopOf("old"), startReq), vmiIn(v1.Running, false), none, 0},
		{"always, stop request, deleting", vmWith(always, always, stopOf("vmi-uid"), startReq), vmiIn(v1.Running, true), none, 0},

		{"rerun, succeeded", vmWith(rerun, rerun), vmiIn(v1.Succeeded, false), stop, 0},
		{"rerun, failed", vmWith(rerun, rerun), vmiIn(v1.Failed, false), stopAndRequestStart, 0},
		{"rerun, failed, start asked already", vmWith(rerun, rerun, startReq), vmiIn(v1.Failed, false), stop, 0},
		{"rerun, failed, stop request for it", vmWith(rerun, rerun, stopOf("vmi-uid")), vmiIn(v1.Failed, false), stopAndRequestStart, 0},
		{"rerun, running", vmWith(rerun, rerun), vmiIn(v1.Running, false), none, 0},
		{"rerun, running, stop request", vmWith(rerun, rerun, stopOf("vmi-uid")), vmiIn(v1.Running, false), stop, 0},
		{"rerun, deleting", vmWith(rerun, rerun), vmiIn(v1.Failed, true), none, 0},
		{"rerun, none, stays stopped", vmWith(rerun, rerun), nil, none, 0},
		{"rerun, none, new VM", vmWith(rerun, ""), nil, start, 0},
		{"rerun, none, from another strategy", vmWith(rerun, always), nil, start, 0},
		{"rerun, none, start request", vmWith(rerun, rerun, startReq), nil, start, 0},
		{"rerun, none, start request, backing off", rerunBackingOff, nil, none, 30 * time.Second},

		{"manual, none", vmWith(manual, ""), nil, none, 0},
		{"manual, none, start request", vmWith(manual, manual, startReq), nil, start, 0},
		{"manual, running", vmWith(manual, manual), vmiIn(v1.Running, false), none, 0},
		{"manual, succeeded", vmWith(manual, manual), vmiIn(v1.Succeeded, false), none, 0},
		{"manual, stop request", vmWith(manual, manual, stopOf("vmi-uid"), startReq), vmiIn(v1.Running, false), stop, 0},
		{"manual, stop request, deleting", vmWith(manual, manual, stopOf("vmi-uid"), startReq), vmiIn(v1.Running, true), none, 0},

		{"halted, none", vmWith(halted, ""), nil, none, 0},
		{"halted, none, start request", vmWith(halted, halted, startReq), nil, setAlways, 0},
		{"halted, running", vmWith(halted, always), vmiIn(v1.Running, false), stop, 0},
		{"halted, succeeded", vmWith(halted, always), vmiIn(v1.Succeeded, false), stop, 0},
		{"halted, deleting", vmWith(halted, always), vmiIn(v1.Running, true), none, 0},

		{"once, none", vmWith(once, ""), nil, start, 0},
		{"once, running", vmWith(once, once), vmiIn(v1.Running, false), none, 0},
		{"once, succeeded", vmWith(once, once), vmiIn(v1.Succeeded, false), none, 0},
		{"once, failed", vmWith(once, once), vmiIn(v1.Failed, false), none, 0},
	}
	for _, c := range cases {
		strategy, err := c.vm.RunStrategy()
		if err != nil {
			t.Fatal(err)
		}
		d, err := decide(c.vm, c.vmi, strategy, now)
		if err != nil || d.action != c.want || d.after != c.after {
			t.Errorf("%s: %v after %s (%v), want %v after %s", c.name, d.action, d.after, err, c.want, c.after)
		}
	}
	if _, err := decide(vmWith("Sometimes", ""), nil, "Sometimes", now); err == nil || err.Error() != "unknown runstrategy: Sometimes" {
		t.Errorf("unknown strategy: %v", err)
	}
}

// TestLegacyRunning: spec.running true is Always, false Halted, as
// KubeVirt's RunStrategy().
func TestLegacyRunning(t *testing.T) {
	for running, want := range map[bool]action{true: start, false: none} {
		vm := &v1.VirtualMachine{Spec: v1.VirtualMachineSpec{Running: &running}}
		strategy, err := vm.RunStrategy()
		if err != nil {
			t.Fatal(err)
		}
		if d, err := decide(vm, nil, strategy, now); err != nil || d.action != want {
			t.Errorf("running %t: %v %v, want %v", running, d.action, err, want)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
