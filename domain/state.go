package domain

import (
	"fmt"

	k8sv1 "k8s.io/api/core/v1"
	v1 "kubevirt.io/api/core/v1"
)

// State is a libvirt domain state. The values mirror libvirt's
// virDomainState, so a launcher converts with State(s).
type State int

// libvirt's domain states (virDomainState).
const (
	StateNoState     State = 0
	StateRunning     State = 1
	StateBlocked     State = 2
	StatePaused      State = 3
	StateShutdown    State = 4 // shutting down
	StateShutoff     State = 5
	StateCrashed     State = 6
	StatePMSuspended State = 7
)

var stateNames = map[State]string{
	StateNoState:     "NoState",
	StateRunning:     "Running",
	StateBlocked:     "Blocked",
	StatePaused:      "Paused",
	StateShutdown:    "ShuttingDown",
	StateShutoff:     "Shutoff",
	StateCrashed:     "Crashed",
	StatePMSuspended: "PMSuspended",
}

// String returns the state's name as KubeVirt spells it ("Shutoff").
func (s State) String() string {
	if n, ok := stateNames[s]; ok {
		return n
	}
	return fmt.Sprintf("State(%d)", int(s))
}

// Active reports whether a QEMU process exists for a domain in this state.
func (s State) Active() bool {
	switch s {
	case StateRunning, StateBlocked, StatePaused, StateShutdown, StatePMSuspended:
		return true
	}
	return false
}

// Reason is why a domain is in its state. Its meaning depends on the state;
// the values mirror libvirt's per-state reason enums
// (virDomainShutoffReason, virDomainPausedReason, ...).
type Reason int

// Reasons of StateShutoff (virDomainShutoffReason).
const (
	ShutoffUnknown      Reason = 0
	ShutoffShutdown     Reason = 1 // the guest powered off
	ShutoffDestroyed    Reason = 2 // forced off (virDomainDestroy)
	ShutoffCrashed      Reason = 3 // QEMU died
	ShutoffMigrated     Reason = 4
	ShutoffSaved        Reason = 5
	ShutoffFailed       Reason = 6 // failed to start
	ShutoffFromSnapshot Reason = 7
	ShutoffDaemon       Reason = 8 // killed by libvirtd while reconnecting
)

// Reasons of StatePaused (virDomainPausedReason).
const (
	PausedUnknown        Reason = 0
	PausedUser           Reason = 1
	PausedMigration      Reason = 2
	PausedSave           Reason = 3
	PausedDump           Reason = 4
	PausedIOError        Reason = 5
	PausedWatchdog       Reason = 6
	PausedFromSnapshot   Reason = 7
	PausedShuttingDown   Reason = 8
	PausedSnapshot       Reason = 9
	PausedCrashed        Reason = 10
	PausedStartingUp     Reason = 11
	PausedPostcopy       Reason = 12
	PausedPostcopyFailed Reason = 13
)

// Reasons of StateCrashed (virDomainCrashedReason).
const (
	CrashedUnknown  Reason = 0
	CrashedPanicked Reason = 1
)

// Reasons of StateShutdown (virDomainShutdownReason).
const (
	ShutdownUnknown Reason = 0
	ShutdownUser    Reason = 1
)

// reasonNames names each state's reasons as KubeVirt's virt-launcher
// translates them (pkg/virt-launcher/virtwrap/util, api.StateChangeReason).
var reasonNames = map[State]map[Reason]string{
	StateShutoff: {
		ShutoffUnknown:      "Unknown",
		ShutoffShutdown:     "Shutdown",
		ShutoffDestroyed:    "Destroyed",
		ShutoffCrashed:      "Crashed",
		ShutoffMigrated:     "Migrated",
		ShutoffSaved:        "Saved",
		ShutoffFailed:       "Failed",
		ShutoffFromSnapshot: "FromSnapshot",
		ShutoffDaemon:       "Daemon",
	},
	StatePaused: {
		PausedUnknown:        "Unknown",
		PausedUser:           "User",
		PausedMigration:      "Migration",
		PausedSave:           "Save",
		PausedDump:           "Dump",
		PausedIOError:        "IOError",
		PausedWatchdog:       "Watchdog",
		PausedFromSnapshot:   "FromSnapshot",
		PausedShuttingDown:   "ShuttingDown",
		PausedSnapshot:       "Snapshot",
		PausedCrashed:        "Crashed",
		PausedStartingUp:     "StartingUp",
		PausedPostcopy:       "Postcopy",
		PausedPostcopyFailed: "PostcopyFailed",
	},
	StateCrashed: {
		CrashedUnknown:  "Unknown",
		CrashedPanicked: "Panicked",
	},
	StateShutdown: {
		ShutdownUnknown: "Unknown",
		ShutdownUser:    "User",
	},
}

// ReasonString names reason r of state s ("Destroyed"); reasons KubeVirt
// does not translate (those of running domains among them) are "Unknown".
func ReasonString(s State, r Reason) string {
	if n, ok := reasonNames[s][r]; ok {
		return n
	}
	return "Unknown"
}

// Observation is what a launcher saw of a VMI's domain at one moment.
type Observation struct {
	// Defined tells whether the domain exists at all; the other fields
	// are meaningless when it does not.
	Defined bool
	State   State
	Reason  Reason
	// ACPI tells whether the domain has <features><acpi/>.
	ACPI bool
	// GracePeriod tells whether the VMI has a termination grace period:
	// spec.terminationGracePeriodSeconds unset (KubeVirt's default applies)
	// or not zero. See HasGracePeriod.
	GracePeriod bool
	// AgentConnected tells whether the guest agent's channel is connected.
	AgentConnected bool
	// Started tells whether the domain has run for this VMI. Until it has,
	// an inactive domain has not been started yet, whatever its reason
	// says (the reason may be left over from an earlier VMI of the same
	// name): it is Scheduled.
	Started bool
}

// HasGracePeriod reports whether vmi has a termination grace period, as
// KubeVirt's virt-handler decides it: unset counts as set (the default
// applies), only an explicit 0 means none.
func HasGracePeriod(vmi *v1.VirtualMachineInstance) bool {
	t := vmi.Spec.TerminationGracePeriodSeconds
	return t == nil || *t != 0
}

// IsFinal reports whether phase is one a VMI never leaves.
func IsFinal(phase v1.VirtualMachineInstancePhase) bool {
	return phase == v1.Succeeded || phase == v1.Failed
}

// phaseRule maps one state and reason to a phase. A nil rule result means
// "keep the previous phase", as KubeVirt does for states it cannot judge.
type phaseRule func(o Observation) v1.VirtualMachineInstancePhase

func always(p v1.VirtualMachineInstancePhase) phaseRule {
	return func(Observation) v1.VirtualMachineInstancePhase { return p }
}

// destroyed judges a domain that was forced off: with ACPI and a grace
// period, the guest was asked to shut down first and did not, so the
// destroy after the grace period is a failure; without ACPI there was no
// way to ask, and a destroyed domain is a normal end.
func destroyed(o Observation) v1.VirtualMachineInstancePhase {
	if o.ACPI && o.GracePeriod {
		return v1.Failed
	}
	return v1.Succeeded
}

// shutoffRules are KubeVirt's rules for shut-off and crashed domains
// (virt-handler, calculateVmPhaseForStatusReason), by reason. Reasons not
// listed keep the previous phase.
var shutoffRules = map[Reason]phaseRule{
	ShutoffShutdown:     always(v1.Succeeded),
	ShutoffDestroyed:    destroyed,
	ShutoffCrashed:      always(v1.Failed),
	ShutoffSaved:        always(v1.Succeeded),
	ShutoffFromSnapshot: always(v1.Succeeded),
	// KubeVirt does not translate this reason (it keeps the phase); here
	// libvirtd killed the domain, which no guest asked for: a failure.
	ShutoffDaemon: always(v1.Failed),
}

// crashedRules are the rules for StateCrashed: KubeVirt fails a panicked
// domain and keeps the phase otherwise.
var crashedRules = map[Reason]phaseRule{
	CrashedPanicked: always(v1.Failed),
}

// Phase returns the VMI phase for observation o, following KubeVirt's
// virt-handler. prev is the phase reported before (empty when none); the
// rules that cannot judge a state keep it.
//
//   - no domain: Pending for a VMI never seen, Failed for one that was
//     Running (its domain vanished under it), else the previous phase;
//   - shut off before it was ever started (Observation.Started false):
//     Scheduled;
//   - shut off: Succeeded after a guest power-off, a save or a snapshot
//     restore; Failed after a crash or a panic; a destroyed domain is
//     Failed when ACPI was on and a grace period was set (the guest ignored
//     the shutdown request), else Succeeded; never started (reason unknown)
//     or failed to start keeps the phase, Scheduled for a new VMI;
//   - paused: Running, except after a failed post-copy migration (Failed);
//   - running, blocked or suspended to memory: Running.
//
// A final phase is never left: once Succeeded or Failed, Phase returns it.
func Phase(o Observation, prev v1.VirtualMachineInstancePhase) v1.VirtualMachineInstancePhase {
	if IsFinal(prev) {
		return prev
	}
	if !o.Defined {
		switch prev {
		case "", v1.Pending:
			return v1.Pending
		case v1.Running:
			return v1.Failed
		}
		return prev
	}
	var rule phaseRule
	switch o.State {
	// Until the domain has run, its reason is not this VMI's: no rule.
	case StateShutoff:
		if o.Started {
			rule = shutoffRules[o.Reason]
		}
	case StateCrashed:
		if o.Started {
			rule = crashedRules[o.Reason]
		}
	case StatePaused:
		rule = always(v1.Running)
		if o.Reason == PausedPostcopyFailed {
			rule = always(v1.Failed)
		}
	case StateRunning, StateBlocked, StatePMSuspended:
		rule = always(v1.Running)
	}
	if rule != nil {
		return rule(o)
	}
	// Shutting down, no state, or a shut-off reason that says nothing of
	// how the guest ended: keep the phase. A defined domain of a VMI with
	// no phase yet is Scheduled: it has a place on this host.
	if prev == "" || prev == v1.Pending {
		return v1.Scheduled
	}
	return prev
}

// endReasons name, by state and reason, why a domain ended: the VMI
// status reason (VirtualMachineInstanceStatus.Reason, CamelCase) of a VMI
// that reached a final phase.
var endReasons = map[State]map[Reason]string{
	StateShutoff: {
		ShutoffShutdown:     "GuestShutdown",
		ShutoffDestroyed:    "Destroyed",
		ShutoffCrashed:      "Crashed",
		ShutoffSaved:        "Saved",
		ShutoffFromSnapshot: "FromSnapshot",
		ShutoffDaemon:       "KilledByLibvirt",
	},
	StateCrashed: {
		CrashedPanicked: "GuestPanicked",
	},
	StatePaused: {
		PausedPostcopyFailed: "PostcopyFailed",
	},
}

// EndReason says why the domain of a VMI that reached a final phase ended:
// "GuestShutdown" (the guest powered off), "Destroyed" (forced off, after
// the grace period when ACPI was on), "Crashed" (QEMU died, e.g. killed),
// "GuestPanicked", "KilledByLibvirt", "Saved", "FromSnapshot",
// "PostcopyFailed", or "DomainVanished" for a domain that disappeared.
// It is "" for a domain that has not ended.
func EndReason(o Observation) string {
	if !o.Defined {
		return "DomainVanished"
	}
	if !o.Started {
		return ""
	}
	return endReasons[o.State][o.Reason]
}

// pausedConditions are the Paused conditions of the paused reasons KubeVirt
// reports (virt-handler, calculatePausedCondition). Other reasons (a domain
// starting up, saving, dumping...) get no condition. KubeVirt reports
// PausedByMigrationMonitor only while it migrates, which this library does
// not do, so a migration pause gets none either.
var pausedConditions = map[Reason]v1.VirtualMachineInstanceCondition{
	PausedUser: {
		Type:    v1.VirtualMachineInstancePaused,
		Status:  k8sv1.ConditionTrue,
		Reason:  "PausedByUser",
		Message: "VMI was paused by user",
	},
	PausedIOError: {
		Type:    v1.VirtualMachineInstancePaused,
		Status:  k8sv1.ConditionTrue,
		Reason:  "PausedIOError",
		Message: "VMI was paused, low-level IO error detected",
	},
}

// Ready condition reasons.
const (
	// ReadyReasonPaused is the Ready condition's reason while the VMI is
	// paused (KubeVirt's pod readiness gate reason).
	ReadyReasonPaused = "Paused"
)

// Conditions returns the VMI conditions that follow from o and phase, in
// this order, without timestamps:
//   - Ready: True when Running and not paused; False with reason
//     GuestNotRunning when not Running, or Paused when paused;
//   - Paused (True, with KubeVirt's reason) when the domain is paused by
//     the user or by an I/O error;
//   - AgentConnected (True) when the guest agent is connected; absent
//     otherwise, as KubeVirt removes it.
func Conditions(o Observation, phase v1.VirtualMachineInstancePhase) []v1.VirtualMachineInstanceCondition {
	paused := o.Defined && o.State == StatePaused
	ready := v1.VirtualMachineInstanceCondition{Type: v1.VirtualMachineInstanceReady, Status: k8sv1.ConditionTrue}
	switch {
	case phase != v1.Running:
		ready.Status = k8sv1.ConditionFalse
		ready.Reason = v1.GuestNotRunningReason
		ready.Message = "Guest VM is not reported as running"
	case paused:
		ready.Status = k8sv1.ConditionFalse
		ready.Reason = ReadyReasonPaused
		ready.Message = "the virtual machine is paused (" + ReasonString(o.State, o.Reason) + ")"
	}
	conds := []v1.VirtualMachineInstanceCondition{ready}
	if c, ok := pausedConditions[o.Reason]; paused && ok {
		conds = append(conds, c)
	}
	if o.AgentConnected && o.Defined && o.State.Active() {
		conds = append(conds, v1.VirtualMachineInstanceCondition{
			Type:   v1.VirtualMachineInstanceAgentConnected,
			Status: k8sv1.ConditionTrue,
		})
	}
	return conds
}

// resumable are the paused reasons after which a launcher's sync resumes
// the domain: pauses nobody asked for that end when resumed. A pause by the
// user stays; so do pauses of work in progress (starting up, saving,
// dumping, snapshotting, migrating, shutting down) and of a guest crash
// or failed migration, which resuming would not mend.
var resumable = map[Reason]bool{
	PausedUnknown:      true,
	PausedIOError:      true,
	PausedWatchdog:     true,
	PausedFromSnapshot: true,
}

// ShouldResume reports whether a domain in state s for reason r was paused
// for a reason other than the user and should be resumed.
func ShouldResume(s State, r Reason) bool {
	return s == StatePaused && resumable[r]
}
