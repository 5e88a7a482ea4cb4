package vm

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
)

// TestFirstChangeRequestDone: KubeVirt's isTrimFirstChangeRequestNeeded.
func TestFirstChangeRequestDone(t *testing.T) {
	cases := []struct {
		name string
		vm   *v1.VirtualMachine
		vmi  *v1.VirtualMachineInstance
		want bool
	}{
		{"none", vmWith(v1.RunStrategyManual, ""), nil, false},
		{"stop, no VMI", vmWith(v1.RunStrategyManual, "", stopOf("vmi-uid")), nil, true},
		{"stop, its VMI", vmWith(v1.RunStrategyManual, "", stopOf("vmi-uid")), vmiIn(v1.Running, true), false},
		{"stop, another VMI", vmWith(v1.RunStrategyManual, "", stopOf("old")), vmiIn(v1.Running, false), true},
		{"stop without UID", vmWith(v1.RunStrategyManual, "", v1.VirtualMachineStateChangeRequest{Action: v1.StopRequest}), vmiIn(v1.Running, false), true},
		{"start, no VMI", vmWith(v1.RunStrategyManual, "", startReq), nil, false},
		{"start, running", vmWith(v1.RunStrategyManual, "", startReq), vmiIn(v1.Running, false), true},
		{"start, pending", vmWith(v1.RunStrategyManual, "", startReq), vmiIn(v1.Pending, false), true},
		{"start, deleting", vmWith(v1.RunStrategyManual, "", startReq), vmiIn(v1.Running, true), false},
		{"start, final", vmWith(v1.RunStrategyManual, "", startReq), vmiIn(v1.Failed, false), false},
	}
	for _, c := range cases {
		if got := firstChangeRequestDone(c.vm, c.vmi); got != c.want {
			t.Errorf("%s: %t, want %t", c.name, got, c.want)
		}
	}
}

// TestStartBackoff: KubeVirt's calculateStartBackoffTime with its maximum
// of 300 s — 10 s times the failures squared, plus up to half again, at
// most 300 s — with the extra part a function of the seed.
func TestStartBackoff(t *testing.T) {
	bounds := map[int][2]time.Duration{
		0: {10 * time.Second, 15 * time.Second}, // as 1
		1: {10 * time.Second, 15 * time.Second},
		2: {40 * time.Second, 60 * time.Second},
		3: {90 * time.Second, 135 * time.Second},
		4: {160 * time.Second, 240 * time.Second},
		5: {250 * time.Second, 300 * time.Second},
		6: {300 * time.Second, 300 * time.Second},
	}
	seen := map[time.Duration]bool{}
	for count, b := range bounds {
		for i := range 50 {
			seed := string(rune('a'+i)) + "-uid"
			d := startBackoff(count, maxStartBackoff, seed)
			if d < b[0] || d > b[1] {
				t.Errorf("count %d seed %q: %s, want within [%s, %s]", count, seed, d, b[0], b[1])
			}
			if d != startBackoff(count, maxStartBackoff, seed) {
				t.Errorf("count %d seed %q: two answers", count, seed)
			}
			if count == 2 {
				seen[d] = true
			}
		}
	}
	if len(seen) < 10 {
		t.Errorf("50 seeds gave %d delays for 2 failures: not spread", len(seen))
	}
}

// TestSyncStartFailure: a VMI that ended without running counts once, the
// next one again, one that ran clears the record, and so does a run
// strategy that does not restart.
func TestSyncStartFailure(t *testing.T) {
	vm := vmWith(v1.RunStrategyAlways, v1.RunStrategyAlways)
	failed := vmiIn(v1.Failed, false)
	syncStartFailure(vm, failed, now)
	f := vm.Status.StartFailure
	if f == nil || f.ConsecutiveFailCount != 1 || f.LastFailedVMIUID != "vmi-uid" {
		t.Fatalf("after a first early failure: %+v", f)
	}
	if left := startFailureBackoffLeft(vm, now); left < 10*time.Second || left > 15*time.Second {
		t.Errorf("backoff left %s, want 10 to 15 s", left)
	}
	if left := startFailureBackoffLeft(vm, now.Add(time.Hour)); left != 0 {
		t.Errorf("backoff left an hour later: %s", left)
	}
	syncStartFailure(vm, failed, now.Add(time.Minute))
	if vm.Status.StartFailure.ConsecutiveFailCount != 1 {
		t.Errorf("the same VMI counted twice: %+v", vm.Status.StartFailure)
	}
	next := failed.DeepCopy()
	next.UID = "next-uid"
	syncStartFailure(vm, next, now)
	if f := vm.Status.StartFailure; f.ConsecutiveFailCount != 2 || f.LastFailedVMIUID != "next-uid" {
		t.Errorf("after a second early failure: %+v", f)
	}
	syncStartFailure(vm, vmiIn(v1.Pending, false), now)
	if vm.Status.StartFailure == nil {
		t.Error("a VMI that did not end yet cleared the record")
	}
	ran := vmiIn(v1.Failed, false)
	ran.Status.PhaseTransitionTimestamps = []v1.VirtualMachineInstancePhaseTransitionTimestamp{{Phase: v1.Running}}
	syncStartFailure(vm, ran, now)
	if vm.Status.StartFailure != nil {
		t.Errorf("a VMI that ran left %+v", vm.Status.StartFailure)
	}
	manual := vmWith(v1.RunStrategyManual, v1.RunStrategyManual)
	manual.Status.StartFailure = &v1.VirtualMachineStartFailure{ConsecutiveFailCount: 3}
	syncStartFailure(manual, failed, now)
	if manual.Status.StartFailure != nil {
		t.Errorf("Manual kept %+v", manual.Status.StartFailure)
	}
}

// TestPrintableStatus: KubeVirt's setPrintableStatus, first match wins.
func TestPrintableStatus(t *testing.T) {
	deletingVM := vmWith(v1.RunStrategyAlways, v1.RunStrategyAlways)
	deletingVM.DeletionTimestamp = &metav1.Time{Time: now}
	paused := vmiIn(v1.Running, false)
	paused.Status.Conditions = []v1.VirtualMachineInstanceCondition{{Type: v1.VirtualMachineInstancePaused, Status: k8sv1.ConditionTrue}}
	crashing := vmWith(v1.RunStrategyAlways, v1.RunStrategyAlways)
	crashing.Status.StartFailure = &v1.VirtualMachineStartFailure{ConsecutiveFailCount: 1}
	crashingManual := crashing.DeepCopy()
	crashingManual.Spec.RunStrategy = ptrTo(v1.RunStrategyManual)
	unschedulable := vmiIn(v1.Pending, false)
	unschedulable.Status.Conditions = []v1.VirtualMachineInstanceCondition{{Type: "PodScheduled", Status: k8sv1.ConditionFalse, Reason: "Unschedulable"}}
	vm := vmWith(v1.RunStrategyAlways, v1.RunStrategyAlways)
	cases := []struct {
		name string
		vm   *v1.VirtualMachine
		o    observed
		want v1.VirtualMachinePrintableStatus
	}{
		{"VM deleting", deletingVM, observed{vmi: vmiIn(v1.Running, false)}, v1.VirtualMachineStatusTerminating},
		{"VMI deleting", vm, observed{vmi: vmiIn(v1.Running, true)}, v1.VirtualMachineStatusStopping},
		{"deletion expected", vm, observed{vmi: vmiIn(v1.Running, false), stopExpected: true}, v1.VirtualMachineStatusStopping},
		{"final VMI deleting", vm, observed{vmi: vmiIn(v1.Succeeded, true)}, v1.VirtualMachineStatusStopped},
		{"paused", vm, observed{vmi: paused}, v1.VirtualMachineStatusPaused},
		{"running", vm, observed{vmi: vmiIn(v1.Running, false)}, v1.VirtualMachineStatusRunning},
		{"unschedulable", vm, observed{vmi: unschedulable}, v1.VirtualMachineStatusUnschedulable},
		{"pending", vm, observed{vmi: vmiIn(v1.Pending, false)}, v1.VirtualMachineStatusStarting},
		{"scheduled", vm, observed{vmi: vmiIn(v1.Scheduled, false)}, v1.VirtualMachineStatusStarting},
		{"creation expected", vm, observed{startExpected: true}, v1.VirtualMachineStatusStarting},
		{"crash loop", crashing, observed{}, v1.VirtualMachineStatusCrashLoopBackOff},
		{"crash loop, final VMI", crashing, observed{vmi: vmiIn(v1.Failed, false)}, v1.VirtualMachineStatusCrashLoopBackOff},
		{"start failures under Manual", crashingManual, observed{}, v1.VirtualMachineStatusStopped},
		{"no VMI", vm, observed{}, v1.VirtualMachineStatusStopped},
		{"final VMI", vm, observed{vmi: vmiIn(v1.Succeeded, false)}, v1.VirtualMachineStatusStopped},
		{"unknown phase", vm, observed{vmi: vmiIn(v1.Unknown, false)}, v1.VirtualMachineStatusUnknown},
	}
	for _, c := range cases {
		if got := printableStatus(c.vm, c.o); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// TestSyncConditions: Ready from the VMI's (or why there is none), Failure
// from the reconcile's error, the VMI's other conditions copied and their
// copies removed with them; a condition whose status and reason hold keeps
// its times.
func TestSyncConditions(t *testing.T) {
	vm := vmWith(v1.RunStrategyAlways, v1.RunStrategyAlways)
	syncConditions(vm, nil, nil, now)
	want := []v1.VirtualMachineCondition{{Type: v1.VirtualMachineReady, Status: k8sv1.ConditionFalse, Reason: "VMINotExists",
		Message: "VMI does not exist", LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}}
	if diff := cmp.Diff(want, vm.Status.Conditions); diff != "" {
		t.Errorf("no VMI (-want +got):\n%s", diff)
	}
	syncConditions(vm, nil, nil, now.Add(time.Minute))
	if diff := cmp.Diff(want, vm.Status.Conditions); diff != "" {
		t.Errorf("unchanged, a minute later (-want +got):\n%s", diff)
	}

	vmi := vmiIn(v1.Running, false)
	ready := metav1.NewTime(now.Add(-time.Hour))
	vmi.Status.Conditions = []v1.VirtualMachineInstanceCondition{
		{Type: v1.VirtualMachineInstanceReady, Status: k8sv1.ConditionTrue, LastTransitionTime: ready},
		{Type: v1.VirtualMachineInstancePaused, Status: k8sv1.ConditionTrue, Reason: "PausedByUser", LastTransitionTime: ready},
	}
	vm.Status.Conditions = append(vm.Status.Conditions, v1.VirtualMachineCondition{Type: v1.VirtualMachineRestartRequired, Status: k8sv1.ConditionTrue})
	syncConditions(vm, vmi, &syncError{startingVMIFailure, errors.New("boom"), reasonFailedCreate}, now)
	want = []v1.VirtualMachineCondition{
		{Type: v1.VirtualMachineReady, Status: k8sv1.ConditionTrue, LastTransitionTime: ready},
		{Type: v1.VirtualMachineRestartRequired, Status: k8sv1.ConditionTrue},
		{Type: v1.VirtualMachineFailure, Status: k8sv1.ConditionTrue, Reason: "FailedCreate", Message: "Failure while starting VMI: boom", LastTransitionTime: metav1.NewTime(now)},
		{Type: v1.VirtualMachinePaused, Status: k8sv1.ConditionTrue, Reason: "PausedByUser", LastTransitionTime: ready},
	}
	if diff := cmp.Diff(want, vm.Status.Conditions); diff != "" {
		t.Errorf("a running, paused VMI and a failed reconcile (-want +got):\n%s", diff)
	}

	vmi.Status.Conditions = vmi.Status.Conditions[:1]
	syncConditions(vm, vmi, nil, now)
	want = []v1.VirtualMachineCondition{
		{Type: v1.VirtualMachineReady, Status: k8sv1.ConditionTrue, LastTransitionTime: ready},
		{Type: v1.VirtualMachineRestartRequired, Status: k8sv1.ConditionTrue},
	}
	if diff := cmp.Diff(want, vm.Status.Conditions); diff != "" {
		t.Errorf("unpaused, the reconcile done (-want +got):\n%s", diff)
	}
}

// TestUpdateStatus: created, ready and the recorded run strategy, and the
// first state change request removed once done.
func TestUpdateStatus(t *testing.T) {
	vm := vmWith(v1.RunStrategyManual, "", startReq)
	updateStatus(vm, observed{startExpected: true, now: now})
	if vm.Status.Created || vm.Status.RunStrategy != "" || len(vm.Status.StateChangeRequests) != 1 || vm.Status.PrintableStatus != v1.VirtualMachineStatusStarting {
		t.Errorf("before its VMI: %+v", vm.Status)
	}
	vmi := vmiIn(v1.Running, false)
	vmi.Status.Conditions = []v1.VirtualMachineInstanceCondition{{Type: v1.VirtualMachineInstanceReady, Status: k8sv1.ConditionTrue}}
	updateStatus(vm, observed{vmi: vmi, now: now})
	if !vm.Status.Created || !vm.Status.Ready || vm.Status.RunStrategy != v1.RunStrategyManual || vm.Status.StateChangeRequests != nil || vm.Status.PrintableStatus != v1.VirtualMachineStatusRunning {
		t.Errorf("with its running VMI: %+v", vm.Status)
	}
	vm.Spec.RunStrategy = ptrTo(v1.RunStrategyHalted)
	vm.Status.StateChangeRequests = []v1.VirtualMachineStateChangeRequest{stopOf(types.UID("vmi-uid"))}
	updateStatus(vm, observed{now: now})
	if vm.Status.Created || vm.Status.Ready || vm.Status.RunStrategy != v1.RunStrategyHalted || vm.Status.StateChangeRequests != nil || vm.Status.PrintableStatus != v1.VirtualMachineStatusStopped {
		t.Errorf("stopped: %+v", vm.Status)
	}
}
