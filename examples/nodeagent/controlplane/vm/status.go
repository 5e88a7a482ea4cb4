package vm

import (
	"hash/fnv"
	"slices"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"
)

// maxStartBackoff is KubeVirt's longest wait before a VM whose VMIs keep
// failing before they run is started again (defaultMaxCrashLoopBackoffDelaySeconds).
const maxStartBackoff = 300 * time.Second

// syncError is a failure of one reconcile that the VM's Failure condition
// reports: what failed in KubeVirt's words (empty: err says it), the
// error, and KubeVirt's reason (FailedCreate, FailedDelete...).
type syncError struct {
	what   string
	err    error
	reason string
}

func (e *syncError) Error() string {
	if e.what == "" {
		return e.err.Error()
	}
	return e.what + ": " + e.err.Error()
}
func (e *syncError) Unwrap() error { return e.err }

// observed is what the controller knows of a VM besides its object: its
// VMI (nil: none), whether a creation or deletion of one is under way
// (expectations), the failure of this reconcile, and the time.
type observed struct {
	vmi           *v1.VirtualMachineInstance
	startExpected bool
	stopExpected  bool
	syncErr       *syncError
	now           time.Time
}

// updateStatus sets vm's status from what the controller observed, as
// updateStatus of KubeVirt's VM controller does (the generations, which
// may need a write to the VMI, are set before): created and ready, the run
// strategy once the VM has had a VMI, the first state change request
// removed once it is done, the start failure record, the conditions and
// the printable status.
func updateStatus(vm *v1.VirtualMachine, o observed) {
	st := &vm.Status
	st.Created = o.vmi != nil
	st.Ready = o.vmi != nil && vmiCondition(o.vmi, v1.VirtualMachineInstanceReady, k8sv1.ConditionTrue)
	// Recorded once the VM has had a VMI, so that RerunOnFailure can tell a
	// VM that comes from another strategy.
	if strategy, err := vm.RunStrategy(); err == nil && (st.RunStrategy != "" || st.Created) {
		st.RunStrategy = strategy
	}
	if firstChangeRequestDone(vm, o.vmi) {
		st.StateChangeRequests = st.StateChangeRequests[1:]
		if len(st.StateChangeRequests) == 0 {
			st.StateChangeRequests = nil
		}
	}
	syncStartFailure(vm, o.vmi, o.now)
	syncConditions(vm, o.vmi, o.syncErr, o.now)
	st.PrintableStatus = printableStatus(vm, o)
}

// firstChangeRequestDone tells whether vm's first state change request is
// done, as KubeVirt's isTrimFirstChangeRequestNeeded: a stop once its VMI
// is gone (no VMI, or one of another UID; a stop without UID cannot be
// done and is dropped), a start once a VMI exists that is neither deleting
// nor final.
func firstChangeRequestDone(vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance) bool {
	if len(vm.Status.StateChangeRequests) == 0 {
		return false
	}
	r := vm.Status.StateChangeRequests[0]
	switch r.Action {
	case v1.StopRequest:
		return vmi == nil || r.UID == nil || *r.UID != vmi.UID
	case v1.StartRequest:
		return vmi != nil && vmi.DeletionTimestamp == nil && !vmi.IsFinal()
	}
	return false
}

// syncStartFailure keeps vm's start failure record as KubeVirt does: a VMI
// that ran clears it, and so does a run strategy that does not restart
// failed VMIs; a VMI that ended without ever running counts one more
// consecutive failure (once per VMI) and sets when the next may start.
func syncStartFailure(vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance, now time.Time) {
	st := &vm.Status
	strategy, err := vm.RunStrategy()
	restarts := err != nil || strategy == v1.RunStrategyAlways || strategy == v1.RunStrategyRerunOnFailure || strategy == v1.RunStrategyOnce
	switch {
	case ranOnce(vmi) || !restarts:
		st.StartFailure = nil
	case vmi != nil && vmi.IsFinal():
		if st.StartFailure != nil && st.StartFailure.LastFailedVMIUID == vmi.UID {
			return // counted
		}
		count := 1
		if st.StartFailure != nil {
			count = st.StartFailure.ConsecutiveFailCount + 1
		}
		retry := metav1.NewTime(now.Add(startBackoff(count, maxStartBackoff, string(vmi.UID))))
		st.StartFailure = &v1.VirtualMachineStartFailure{LastFailedVMIUID: vmi.UID, RetryAfterTimestamp: &retry, ConsecutiveFailCount: count}
	}
}

// ranOnce tells whether vmi ever was Running.
func ranOnce(vmi *v1.VirtualMachineInstance) bool {
	return vmi != nil && slices.ContainsFunc(vmi.Status.PhaseTransitionTimestamps, func(t v1.VirtualMachineInstancePhaseTransitionTimestamp) bool {
		return t.Phase == v1.Running
	})
}

// startBackoff is how long a VM waits before its next start after count
// consecutive start failures, by KubeVirt's formula
// (calculateStartBackoffTime): maxDelay/30 but at least 10 s, times count
// squared, plus up to half of that again, at most maxDelay. KubeVirt draws the
// extra part at random to spread failing VMs apart; here it is drawn from
// a hash of the failed VMI's UID (seed), which spreads them the same way
// and gives a restarted controller the same answer.
func startBackoff(count int, maxDelay time.Duration, seed string) time.Duration {
	count = max(count, 1)
	interval := max(int(maxDelay.Seconds())/30, 10)
	delay := interval * count * count
	h := fnv.New32a()
	h.Write([]byte(seed))
	delay += int(h.Sum32() % uint32(delay/2+1))
	return min(time.Duration(delay)*time.Second, maxDelay)
}

// startFailureBackoffLeft is how long vm must still wait before it may
// start again after start failures (0: it may).
func startFailureBackoffLeft(vm *v1.VirtualMachine, now time.Time) time.Duration {
	f := vm.Status.StartFailure
	if f == nil || f.RetryAfterTimestamp == nil {
		return 0
	}
	// To the second, as KubeVirt compares Unix times.
	left := time.Duration(f.RetryAfterTimestamp.Unix()-now.Unix()) * time.Second
	return max(left, 0)
}

// syncConditions sets vm's conditions as KubeVirt's syncConditions does:
// Ready from the VMI's Ready condition (False, VMINotExists or
// VMIConditionMissing, without one), Failure while the last reconcile
// failed, and every other condition of the VMI copied (the VM's copies of
// conditions the VMI no longer has removed); RestartRequired is the
// controller's own and stays as it is.
func syncConditions(vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance, syncErr *syncError, now time.Time) {
	t := metav1.NewTime(now)
	ready := v1.VirtualMachineCondition{Type: v1.VirtualMachineReady, Status: k8sv1.ConditionFalse,
		Reason: "VMINotExists", Message: "VMI does not exist", LastProbeTime: t, LastTransitionTime: t}
	if vmi != nil {
		ready.Reason, ready.Message = "VMIConditionMissing", "VMI is missing the Ready condition"
		for _, c := range vmi.Status.Conditions {
			if c.Type == v1.VirtualMachineInstanceReady {
				ready = v1.VirtualMachineCondition{Type: v1.VirtualMachineReady, Status: c.Status, Reason: c.Reason,
					Message: c.Message, LastProbeTime: c.LastProbeTime, LastTransitionTime: c.LastTransitionTime}
			}
		}
	}
	setCondition(vm, ready)

	if syncErr == nil {
		removeCondition(vm, v1.VirtualMachineFailure)
	} else {
		setCondition(vm, v1.VirtualMachineCondition{Type: v1.VirtualMachineFailure, Status: k8sv1.ConditionTrue,
			Reason: syncErr.reason, Message: syncErr.Error(), LastTransitionTime: t})
	}

	if vmi == nil {
		return
	}
	own := []v1.VirtualMachineConditionType{v1.VirtualMachineReady, v1.VirtualMachineFailure, v1.VirtualMachineRestartRequired}
	copied := map[v1.VirtualMachineConditionType]bool{}
	for _, c := range vmi.Status.Conditions {
		typ := v1.VirtualMachineConditionType(c.Type)
		if slices.Contains(own, typ) {
			continue
		}
		copied[typ] = true
		setCondition(vm, v1.VirtualMachineCondition{Type: typ, Status: c.Status, Reason: c.Reason,
			Message: c.Message, LastProbeTime: c.LastProbeTime, LastTransitionTime: c.LastTransitionTime})
	}
	for _, c := range slices.Clone(vm.Status.Conditions) {
		if !slices.Contains(own, c.Type) && !copied[c.Type] {
			removeCondition(vm, c.Type)
		}
	}
}

// setCondition sets a condition of vm, unless one of its type is set with
// the same status and reason (KubeVirt's UpdateCondition: an unchanged
// condition keeps its times and message).
func setCondition(vm *v1.VirtualMachine, c v1.VirtualMachineCondition) {
	for i, have := range vm.Status.Conditions {
		if have.Type == c.Type {
			if have.Status != c.Status || have.Reason != c.Reason {
				vm.Status.Conditions[i] = c
			}
			return
		}
	}
	vm.Status.Conditions = append(vm.Status.Conditions, c)
}

// removeCondition removes vm's condition of type typ.
func removeCondition(vm *v1.VirtualMachine, typ v1.VirtualMachineConditionType) {
	vm.Status.Conditions = slices.DeleteFunc(vm.Status.Conditions, func(c v1.VirtualMachineCondition) bool { return c.Type == typ })
	if len(vm.Status.Conditions) == 0 {
		vm.Status.Conditions = nil
	}
}

// vmiCondition tells whether vmi has a condition of type typ with status.
func vmiCondition(vmi *v1.VirtualMachineInstance, typ v1.VirtualMachineInstanceConditionType, status k8sv1.ConditionStatus) bool {
	return vmi != nil && slices.ContainsFunc(vmi.Status.Conditions, func(c v1.VirtualMachineInstanceCondition) bool {
		return c.Type == typ && c.Status == status
	})
}

// printableStatuses are the printable statuses a VM may have, in KubeVirt's
// order of precedence (setPrintableStatus): the first that holds is the
// VM's, Unknown when none does. Those that need objects this control plane
// does not have (DataVolumes, PVCs, migrations, receivers) are left out.
var printableStatuses = []struct {
	status v1.VirtualMachinePrintableStatus
	holds  func(vm *v1.VirtualMachine, o observed) bool
}{
	{v1.VirtualMachineStatusTerminating, func(vm *v1.VirtualMachine, o observed) bool { return vm.DeletionTimestamp != nil }},
	{v1.VirtualMachineStatusStopping, func(vm *v1.VirtualMachine, o observed) bool {
		return o.vmi != nil && !o.vmi.IsFinal() && (o.vmi.IsMarkedForDeletion() || o.stopExpected)
	}},
	{v1.VirtualMachineStatusPaused, func(vm *v1.VirtualMachine, o observed) bool {
		return o.vmi != nil && o.vmi.IsRunning() && vmiCondition(o.vmi, v1.VirtualMachineInstancePaused, k8sv1.ConditionTrue)
	}},
	{v1.VirtualMachineStatusRunning, func(vm *v1.VirtualMachine, o observed) bool {
		return o.vmi != nil && o.vmi.IsRunning() && !vmiCondition(o.vmi, v1.VirtualMachineInstancePaused, k8sv1.ConditionTrue)
	}},
	{v1.VirtualMachineStatusPvcNotFound, func(vm *v1.VirtualMachine, o observed) bool {
		return syncReason(o.vmi, "FailedPvcNotFound")
	}},
	{v1.VirtualMachineStatusUnschedulable, func(vm *v1.VirtualMachine, o observed) bool {
		return o.vmi != nil && slices.ContainsFunc(o.vmi.Status.Conditions, func(c v1.VirtualMachineInstanceCondition) bool {
			return c.Type == v1.VirtualMachineInstanceConditionType(k8sv1.PodScheduled) && c.Status == k8sv1.ConditionFalse && c.Reason == k8sv1.PodReasonUnschedulable
		})
	}},
	{v1.VirtualMachineStatusErrImagePull, func(vm *v1.VirtualMachine, o observed) bool { return syncReason(o.vmi, "ErrImagePull") }},
	{v1.VirtualMachineStatusImagePullBackOff, func(vm *v1.VirtualMachine, o observed) bool { return syncReason(o.vmi, "ImagePullBackOff") }},
	{v1.VirtualMachineStatusStarting, func(vm *v1.VirtualMachine, o observed) bool {
		if o.vmi == nil {
			return o.startExpected
		}
		return o.vmi.IsUnprocessed() || o.vmi.IsScheduling() || o.vmi.IsScheduled()
	}},
	{v1.VirtualMachineStatusCrashLoopBackOff, func(vm *v1.VirtualMachine, o observed) bool {
		if (o.vmi != nil && !o.vmi.IsFinal()) || o.startExpected {
			return false
		}
		strategy, err := vm.RunStrategy()
		return err == nil && vm.Status.StartFailure != nil && vm.Status.StartFailure.ConsecutiveFailCount > 0 &&
			(strategy == v1.RunStrategyAlways || strategy == v1.RunStrategyRerunOnFailure || strategy == v1.RunStrategyOnce)
	}},
	{v1.VirtualMachineStatusStopped, func(vm *v1.VirtualMachine, o observed) bool {
		if o.vmi != nil {
			return o.vmi.IsFinal()
		}
		return !o.startExpected
	}},
}

// printableStatus is the first of printableStatuses that holds.
func printableStatus(vm *v1.VirtualMachine, o observed) v1.VirtualMachinePrintableStatus {
	for _, s := range printableStatuses {
		if s.holds(vm, o) {
			return s.status
		}
	}
	return v1.VirtualMachineStatusUnknown
}

// syncReason tells whether vmi's Synchronized condition is False with
// reason.
func syncReason(vmi *v1.VirtualMachineInstance, reason string) bool {
	return vmi != nil && slices.ContainsFunc(vmi.Status.Conditions, func(c v1.VirtualMachineInstanceCondition) bool {
		return c.Type == v1.VirtualMachineInstanceSynchronized && c.Status == k8sv1.ConditionFalse && c.Reason == reason
	})
}
