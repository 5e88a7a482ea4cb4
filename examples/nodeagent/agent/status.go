package agent

import (
	"slices"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

// syncFailedReason is the reason KubeVirt's virt-handler gives the
// Synchronized condition when it cannot bring a VMI's domain to its spec
// (the message is the error).
const syncFailedReason = "Synchronizing with the Domain failed."

// Status reasons (VirtualMachineInstanceStatus.Reason) the agent writes
// itself; the launcher's are those of domain.EndReason.
const (
	// reasonInvalid: the launcher refused the VMI as it is (ErrInvalid).
	reasonInvalid = "Invalid"
	// reasonDomainVanished: the VMI was Scheduled or Running here and its
	// domain is gone (domain.EndReason's word for it).
	reasonDomainVanished = "DomainVanished"
)

// ownedConditions are the condition types the agent writes. Conditions of
// other types on a VMI are left as they are.
var ownedConditions = []v1.VirtualMachineInstanceConditionType{
	v1.VirtualMachineInstanceReady,
	v1.VirtualMachineInstancePaused,
	v1.VirtualMachineInstanceAgentConnected,
	v1.VirtualMachineInstanceSynchronized,
}

// phaseRank orders the phases a VMI goes through. A status the agent
// writes never goes back to a lower rank, and never leaves a final phase.
var phaseRank = map[v1.VirtualMachineInstancePhase]int{
	v1.VmPhaseUnset: 0,
	v1.Unknown:      0,
	v1.Pending:      1,
	v1.Scheduling:   2,
	v1.Scheduled:    3,
	v1.Running:      4,
	v1.Succeeded:    5,
	v1.Failed:       5,
}

// syncResult is what the agent learnt from its last call to bring the VMI
// to its spec: nothing (Err nil), a transient failure, or a refusal that
// ends the VMI (Refused); or that it did not try (Unknown: the status
// comes from a libvirt event, and the object's Synchronized condition
// stays as it is).
type syncResult struct {
	Err     error
	Refused bool
	Unknown bool
}

// desiredStatus is the status the agent writes for a VMI whose status is
// cur, when the launcher reports observed for it: cur with the parts the
// agent owns (phase and reason, phase transitions, the conditions of
// ownedConditions, nodeName, interfaces, guest OS, volumes, machine, the
// vCPU topology and memory it runs with)
// taken from observed, and the Synchronized condition from sync. now
// stamps what changes. The rules:
//
//   - a final phase is never left: a VMI that is Succeeded or Failed keeps
//     its status;
//   - a refused VMI (sync.Refused) becomes Failed, reason Invalid;
//   - the phase never goes back (the launcher reports Pending for a VMI it
//     has not defined yet, whatever the object says);
//   - each phase is recorded once in phaseTransitionTimestamps, at the time
//     the launcher saw it when it did (the object's own record wins), so a
//     restarted agent continues the same list;
//   - a condition that keeps its status and reason keeps its transition
//     time;
//   - the Synchronized condition says the sync failed (False, the error its
//     message) or is absent; with sync.Unknown it stays as it is.
func desiredStatus(cur, observed v1.VirtualMachineInstanceStatus, node string, sync syncResult, now time.Time) v1.VirtualMachineInstanceStatus {
	if domain.IsFinal(cur.Phase) {
		return cur
	}
	now = now.UTC().Truncate(time.Second)
	out := *cur.DeepCopy()
	out.NodeName = node

	phase, reason := observed.Phase, observed.Reason
	if sync.Refused {
		phase, reason = v1.Failed, reasonInvalid
	}
	if phaseRank[phase] < phaseRank[cur.Phase] {
		phase, reason = cur.Phase, cur.Reason
	}
	out.Phase, out.Reason = phase, reason
	out.PhaseTransitionTimestamps = mergeTransitions(cur.PhaseTransitionTimestamps, observed.PhaseTransitionTimestamps, cur.Phase, phase, now)

	// The launcher reports no Synchronized condition; observed may be the
	// object's own status, whose old one is replaced.
	want := slices.DeleteFunc(slices.Clone(observed.Conditions), func(c v1.VirtualMachineInstanceCondition) bool {
		return c.Type == v1.VirtualMachineInstanceSynchronized
	})
	switch {
	case sync.Unknown:
		if c := syncFailure(cur); c != nil {
			want = append(want, *c)
		}
	case sync.Err != nil:
		want = append(want, v1.VirtualMachineInstanceCondition{
			Type:    v1.VirtualMachineInstanceSynchronized,
			Status:  k8sv1.ConditionFalse,
			Reason:  syncFailedReason,
			Message: sync.Err.Error(),
		})
	}
	out.Conditions = mergeConditions(cur.Conditions, want, now)

	out.Interfaces = observed.Interfaces
	out.GuestOSInfo = observed.GuestOSInfo
	out.VolumeStatus = observed.VolumeStatus
	out.CurrentCPUTopology = observed.CurrentCPUTopology
	out.Memory = observed.Memory
	if observed.Machine != nil {
		out.Machine = observed.Machine
	}
	return out
}

// deletedEnd is the status a VMI being deleted ends with once its guest
// is off, given what the launcher observed: its own final phase when the
// guest ended (Succeeded, Failed), otherwise Failed — a guest that never
// started (a domain defined, not yet started, or none) or was taken off
// mid-way, as KubeVirt fails a VMI whose pod went away. The final phase is
// what lets the control plane drop its finalizers (the VM controller's,
// KubeVirt's foregroundDeleteVirtualMachine): without it the object would
// stay deleting for good once the agent's finalizer is gone.
func deletedEnd(observed v1.VirtualMachineInstanceStatus) v1.VirtualMachineInstanceStatus {
	if domain.IsFinal(observed.Phase) {
		return observed
	}
	out := *observed.DeepCopy()
	out.Phase, out.Reason = v1.Failed, ""
	return out
}

// mergeTransitions returns the phase transitions of a VMI going from phase
// from to phase to: the object's own (have), then each phase above from
// and up to to that it lacks, at the time the launcher recorded it (seen)
// or now, in order of rank.
func mergeTransitions(have, seen []v1.VirtualMachineInstancePhaseTransitionTimestamp, from, to v1.VirtualMachineInstancePhase, now time.Time) []v1.VirtualMachineInstancePhaseTransitionTimestamp {
	out := slices.Clone(have)
	recorded := func(p v1.VirtualMachineInstancePhase) bool {
		return slices.ContainsFunc(out, func(t v1.VirtualMachineInstancePhaseTransitionTimestamp) bool { return t.Phase == p })
	}
	var added []v1.VirtualMachineInstancePhaseTransitionTimestamp
	for _, t := range seen {
		if r := phaseRank[t.Phase]; r > phaseRank[from] && r < phaseRank[to] && !recorded(t.Phase) {
			added = append(added, v1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: t.Phase, PhaseTransitionTimestamp: t.PhaseTransitionTimestamp.Rfc3339Copy()})
		}
	}
	if to != v1.VmPhaseUnset && !recorded(to) {
		at := metav1.NewTime(now)
		for _, t := range seen {
			if t.Phase == to {
				at = t.PhaseTransitionTimestamp.Rfc3339Copy()
			}
		}
		added = append(added, v1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: to, PhaseTransitionTimestamp: at})
	}
	slices.SortStableFunc(added, func(a, b v1.VirtualMachineInstancePhaseTransitionTimestamp) int {
		return phaseRank[a.Phase] - phaseRank[b.Phase]
	})
	return append(out, added...)
}

// mergeConditions returns have's conditions of types the agent does not
// own, in their order, then want's (of owned types), each keeping the
// transition time it has in have when its status and reason did not
// change, else the time want gives it (the launcher's, when it saw the
// change), else now. An owned condition that want lacks is removed.
func mergeConditions(have, want []v1.VirtualMachineInstanceCondition, now time.Time) []v1.VirtualMachineInstanceCondition {
	var out []v1.VirtualMachineInstanceCondition
	for _, c := range have {
		if !slices.Contains(ownedConditions, c.Type) {
			out = append(out, c)
		}
	}
	for _, c := range want {
		c.LastProbeTime = metav1.Time{}
		if c.LastTransitionTime.IsZero() {
			c.LastTransitionTime = metav1.NewTime(now)
		} else {
			c.LastTransitionTime = c.LastTransitionTime.Rfc3339Copy()
		}
		for _, h := range have {
			if h.Type == c.Type && h.Status == c.Status && h.Reason == c.Reason {
				c.LastTransitionTime = h.LastTransitionTime
			}
		}
		out = append(out, c)
	}
	return out
}

// newPhases returns the phases in after's transitions that before's lack,
// with their times: the phase changes a status write makes.
func newPhases(before, after v1.VirtualMachineInstanceStatus) []v1.VirtualMachineInstancePhaseTransitionTimestamp {
	var out []v1.VirtualMachineInstancePhaseTransitionTimestamp
	for _, t := range after.PhaseTransitionTimestamps {
		if !slices.ContainsFunc(before.PhaseTransitionTimestamps, func(b v1.VirtualMachineInstancePhaseTransitionTimestamp) bool { return b.Phase == t.Phase }) {
			out = append(out, t)
		}
	}
	return out
}

// syncFailure returns status's Synchronized condition when it says the
// last sync failed, else nil.
func syncFailure(status v1.VirtualMachineInstanceStatus) *v1.VirtualMachineInstanceCondition {
	for i, c := range status.Conditions {
		if c.Type == v1.VirtualMachineInstanceSynchronized && c.Status == k8sv1.ConditionFalse {
			return &status.Conditions[i]
		}
	}
	return nil
}

// sameSyncFailure tells whether a and b report the same sync failure (or
// both none).
func sameSyncFailure(a, b v1.VirtualMachineInstanceStatus) bool {
	fa, fb := syncFailure(a), syncFailure(b)
	if fa == nil || fb == nil {
		return fa == fb
	}
	return fa.Message == fb.Message
}
