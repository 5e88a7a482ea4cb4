package domain

import (
	"testing"

	k8sv1 "k8s.io/api/core/v1"
	v1 "kubevirt.io/api/core/v1"
)

// The expected phases below were checked by hand against KubeVirt's
// virt-handler (pkg/virt-handler/vm.go, calculateVmPhaseForStatusReason)
// and its state translation (pkg/virt-launcher/virtwrap/util/libvirt_helper.go).
// Where this library departs from KubeVirt the row says so.
func TestPhase(t *testing.T) {
	on := func(s State, r Reason) Observation {
		return Observation{Defined: true, State: s, Reason: r, ACPI: true, GracePeriod: true, Started: true}
	}
	fresh := func(o Observation) Observation { o.Started = false; return o }
	noACPI := func(o Observation) Observation { o.ACPI = false; return o }
	noGrace := func(o Observation) Observation { o.GracePeriod = false; return o }
	tests := []struct {
		name string
		obs  Observation
		prev v1.VirtualMachineInstancePhase
		want v1.VirtualMachineInstancePhase
	}{
		// No domain.
		{"never seen, no domain", Observation{}, "", v1.Pending},
		{"pending, no domain", Observation{}, v1.Pending, v1.Pending},
		{"scheduled, domain gone", Observation{}, v1.Scheduled, v1.Scheduled},
		// Departs from KubeVirt, which asks its launcher: here nobody but
		// libvirt can run the domain, so a vanished one has failed.
		{"running, domain gone", Observation{}, v1.Running, v1.Failed},
		{"succeeded, domain gone", Observation{}, v1.Succeeded, v1.Succeeded},

		// Defined, never started.
		{"defined, never started", on(StateShutoff, ShutoffUnknown), "", v1.Scheduled},
		{"defined after pending", on(StateShutoff, ShutoffUnknown), v1.Pending, v1.Scheduled},
		{"defined, scheduled", on(StateShutoff, ShutoffUnknown), v1.Scheduled, v1.Scheduled},
		{"failed to start keeps phase", on(StateShutoff, ShutoffFailed), v1.Scheduled, v1.Scheduled},
		// A shut-off domain left over from an earlier VMI of the same name.
		{"not started, stale shutdown reason", fresh(on(StateShutoff, ShutoffShutdown)), "", v1.Scheduled},
		{"not started, stale crash reason", fresh(on(StateShutoff, ShutoffCrashed)), v1.Scheduled, v1.Scheduled},
		{"not started, crashed state", fresh(on(StateCrashed, CrashedPanicked)), v1.Pending, v1.Scheduled},

		// Running family.
		{"running", on(StateRunning, 1), v1.Scheduled, v1.Running},
		{"running, first sight", on(StateRunning, 1), "", v1.Running},
		{"blocked", on(StateBlocked, 0), v1.Running, v1.Running},
		{"pm suspended", on(StatePMSuspended, 0), v1.Running, v1.Running},
		{"paused by user", on(StatePaused, PausedUser), v1.Running, v1.Running},
		{"paused io error", on(StatePaused, PausedIOError), v1.Running, v1.Running},
		{"paused starting up", on(StatePaused, PausedStartingUp), v1.Scheduled, v1.Running},
		{"paused postcopy failed", on(StatePaused, PausedPostcopyFailed), v1.Running, v1.Failed},
		{"shutting down keeps phase", on(StateShutdown, ShutdownUser), v1.Running, v1.Running},
		{"no state keeps phase", on(StateNoState, 0), v1.Running, v1.Running},

		// Shut off.
		{"guest powered off", on(StateShutoff, ShutoffShutdown), v1.Running, v1.Succeeded},
		{"qemu crashed (SIGKILL)", on(StateShutoff, ShutoffCrashed), v1.Running, v1.Failed},
		{"saved", on(StateShutoff, ShutoffSaved), v1.Running, v1.Succeeded},
		{"from snapshot", on(StateShutoff, ShutoffFromSnapshot), v1.Running, v1.Succeeded},
		{"migrated keeps phase", on(StateShutoff, ShutoffMigrated), v1.Running, v1.Running},
		{"destroyed, ACPI and grace period", on(StateShutoff, ShutoffDestroyed), v1.Running, v1.Failed},
		{"destroyed, no ACPI", noACPI(on(StateShutoff, ShutoffDestroyed)), v1.Running, v1.Succeeded},
		{"destroyed, grace period 0", noGrace(on(StateShutoff, ShutoffDestroyed)), v1.Running, v1.Succeeded},
		// Departs from KubeVirt (which keeps the phase for this reason it
		// does not translate): libvirtd killed the domain.
		{"killed by daemon", on(StateShutoff, ShutoffDaemon), v1.Running, v1.Failed},

		// Crashed state.
		{"crashed, panicked", on(StateCrashed, CrashedPanicked), v1.Running, v1.Failed},
		{"crashed, unknown keeps phase", on(StateCrashed, CrashedUnknown), v1.Running, v1.Running},

		// Final phases stay.
		{"succeeded stays", on(StateRunning, 1), v1.Succeeded, v1.Succeeded},
		{"failed stays", on(StateShutoff, ShutoffShutdown), v1.Failed, v1.Failed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Phase(tt.obs, tt.prev); got != tt.want {
				t.Errorf("Phase(%s/%s, prev %q) = %q, want %q", tt.obs.State,
					ReasonString(tt.obs.State, tt.obs.Reason), tt.prev, got, tt.want)
			}
		})
	}
}

func TestConditions(t *testing.T) {
	type cond struct {
		typ    v1.VirtualMachineInstanceConditionType
		status k8sv1.ConditionStatus
		reason string
	}
	ready := cond{v1.VirtualMachineInstanceReady, k8sv1.ConditionTrue, ""}
	notRunning := cond{v1.VirtualMachineInstanceReady, k8sv1.ConditionFalse, "GuestNotRunning"}
	readyPaused := cond{v1.VirtualMachineInstanceReady, k8sv1.ConditionFalse, "Paused"}
	agent := cond{v1.VirtualMachineInstanceAgentConnected, k8sv1.ConditionTrue, ""}
	tests := []struct {
		name  string
		obs   Observation
		phase v1.VirtualMachineInstancePhase
		want  []cond
	}{
		{"no domain", Observation{}, v1.Pending, []cond{notRunning}},
		{"scheduled", Observation{Defined: true, State: StateShutoff}, v1.Scheduled, []cond{notRunning}},
		{"running", Observation{Defined: true, State: StateRunning}, v1.Running, []cond{ready}},
		{"running with agent", Observation{Defined: true, State: StateRunning, AgentConnected: true}, v1.Running, []cond{ready, agent}},
		{"paused by user", Observation{Defined: true, State: StatePaused, Reason: PausedUser}, v1.Running,
			[]cond{readyPaused, {v1.VirtualMachineInstancePaused, k8sv1.ConditionTrue, "PausedByUser"}}},
		{"paused by io error, agent", Observation{Defined: true, State: StatePaused, Reason: PausedIOError, AgentConnected: true}, v1.Running,
			[]cond{readyPaused, {v1.VirtualMachineInstancePaused, k8sv1.ConditionTrue, "PausedIOError"}, agent}},
		// KubeVirt adds no Paused condition for these reasons.
		{"paused starting up", Observation{Defined: true, State: StatePaused, Reason: PausedStartingUp}, v1.Running, []cond{readyPaused}},
		{"paused for migration", Observation{Defined: true, State: StatePaused, Reason: PausedMigration}, v1.Running, []cond{readyPaused}},
		{"succeeded", Observation{Defined: true, State: StateShutoff, Reason: ShutoffShutdown}, v1.Succeeded, []cond{notRunning}},
		{"agent flag of a shut-off domain ignored", Observation{Defined: true, State: StateShutoff, AgentConnected: true}, v1.Succeeded, []cond{notRunning}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Conditions(tt.obs, tt.phase)
			if len(got) != len(tt.want) {
				t.Fatalf("got %d conditions %+v, want %d", len(got), got, len(tt.want))
			}
			for i, w := range tt.want {
				g := got[i]
				if g.Type != w.typ || g.Status != w.status || g.Reason != w.reason {
					t.Errorf("condition %d = %s/%s/%q, want %s/%s/%q", i, g.Type, g.Status, g.Reason, w.typ, w.status, w.reason)
				}
			}
		})
	}
}

func TestReadyMessageNamesPauseReason(t *testing.T) {
	c := Conditions(Observation{Defined: true, State: StatePaused, Reason: PausedStartingUp}, v1.Running)
	if c[0].Message != "the virtual machine is paused (StartingUp)" {
		t.Errorf("Ready message %q", c[0].Message)
	}
}

func TestShouldResume(t *testing.T) {
	tests := []struct {
		s    State
		r    Reason
		want bool
	}{
		{StatePaused, PausedUser, false},
		{StatePaused, PausedStartingUp, false},
		{StatePaused, PausedMigration, false},
		{StatePaused, PausedSave, false},
		{StatePaused, PausedShuttingDown, false},
		{StatePaused, PausedPostcopyFailed, false},
		{StatePaused, PausedCrashed, false},
		{StatePaused, PausedUnknown, true},
		{StatePaused, PausedIOError, true},
		{StatePaused, PausedWatchdog, true},
		{StatePaused, PausedFromSnapshot, true},
		{StateRunning, 0, false},
		{StateShutoff, 0, false},
	}
	for _, tt := range tests {
		if got := ShouldResume(tt.s, tt.r); got != tt.want {
			t.Errorf("ShouldResume(%s, %s) = %v, want %v", tt.s, ReasonString(tt.s, tt.r), got, tt.want)
		}
	}
}

func TestHasGracePeriod(t *testing.T) {
	zero, thirty := int64(0), int64(30)
	for _, tt := range []struct {
		v    *int64
		want bool
	}{{nil, true}, {&zero, false}, {&thirty, true}} {
		vmi := &v1.VirtualMachineInstance{}
		vmi.Spec.TerminationGracePeriodSeconds = tt.v
		if got := HasGracePeriod(vmi); got != tt.want {
			t.Errorf("HasGracePeriod(%v) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

func TestNames(t *testing.T) {
	if got := StateShutoff.String(); got != "Shutoff" {
		t.Errorf("StateShutoff = %q", got)
	}
	if got := State(42).String(); got != "State(42)" {
		t.Errorf("State(42) = %q", got)
	}
	if got := ReasonString(StateShutoff, ShutoffDestroyed); got != "Destroyed" {
		t.Errorf("shutoff/destroyed = %q", got)
	}
	if got := ReasonString(StatePaused, PausedUser); got != "User" {
		t.Errorf("paused/user = %q", got)
	}
	if got := ReasonString(StateRunning, 1); got != "Unknown" {
		t.Errorf("running/booted = %q", got)
	}
}

func TestEndReason(t *testing.T) {
	ended := func(s State, r Reason) Observation {
		return Observation{Defined: true, State: s, Reason: r, Started: true}
	}
	tests := []struct {
		obs  Observation
		want string
	}{
		{ended(StateShutoff, ShutoffShutdown), "GuestShutdown"},
		{ended(StateShutoff, ShutoffDestroyed), "Destroyed"},
		{ended(StateShutoff, ShutoffCrashed), "Crashed"},
		{ended(StateShutoff, ShutoffDaemon), "KilledByLibvirt"},
		{ended(StateCrashed, CrashedPanicked), "GuestPanicked"},
		{ended(StatePaused, PausedPostcopyFailed), "PostcopyFailed"},
		{Observation{}, "DomainVanished"},
		{ended(StateRunning, 1), ""},
		{ended(StateShutoff, ShutoffUnknown), ""},
		{Observation{Defined: true, State: StateShutoff, Reason: ShutoffCrashed}, ""}, // not started yet
	}
	for _, tt := range tests {
		if got := EndReason(tt.obs); got != tt.want {
			t.Errorf("EndReason(%s/%s) = %q, want %q", tt.obs.State, ReasonString(tt.obs.State, tt.obs.Reason), got, tt.want)
		}
	}
}
