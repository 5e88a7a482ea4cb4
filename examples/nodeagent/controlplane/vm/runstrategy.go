package vm

import (
	"fmt"
	"time"

	v1 "kubevirt.io/api/core/v1"
)

// action is what the controller does about a VM's VMI in one reconcile.
type action int

const (
	// none: the VMI is as the run strategy wants it, or the controller
	// waits for something (a deletion under way, a backoff).
	none action = iota
	// start creates the VMI from the VM's template.
	start
	// stop deletes the VMI (its UID the precondition).
	stop
	// stopAndRequestStart first adds a start request to the VM's status,
	// then deletes the VMI: RerunOnFailure's failed VMI, whose next VMI the
	// start request brings once it is gone.
	stopAndRequestStart
	// setAlways sets the VM's run strategy to Always (spec.running true
	// for a VM that uses it): a Halted VM with a start request, as
	// KubeVirt's start with --paused leaves it.
	setAlways
)

func (a action) String() string {
	return [...]string{"none", "start", "stop", "stopAndRequestStart", "setAlways"}[a]
}

// decision is the action a run strategy asks for, and when to look again
// without an event (a start failure's backoff that is not over).
type decision struct {
	action action
	after  time.Duration
}

// decide applies a run strategy to a VM and its VMI (nil: none), as
// syncRunStrategy of KubeVirt's VM controller (pkg/virt-controller/watch/vm/
// vm.go) does:
//
//   - Always: a VMI must run. A final VMI, or one a stop request names, is
//     deleted; once none is left a new one starts (after the start failure
//     backoff).
//   - RerunOnFailure: a final VMI, or one a stop request names, is deleted;
//     one that Failed gets a start request first, so that a new one starts
//     (after the backoff). Without a VMI, one starts when a start request
//     is pending or the VM comes from another run strategy.
//   - Manual: a stop request deletes the VMI it names; a start request
//     starts one when there is none.
//   - Halted: any VMI is deleted; a start request sets the strategy to
//     Always.
//   - Once: a VMI starts when there is none, and is left as it ends.
//
// A VMI being deleted is left to go: a stop is never sent twice, and
// nothing starts while it exists. now is the time, for the backoff.
func decide(vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance, strategy v1.VirtualMachineRunStrategy, now time.Time) (decision, error) {
	deleting := vmi != nil && vmi.DeletionTimestamp != nil
	stopAsked := vmi != nil && hasStopRequestFor(vm, vmi)
	backoff := startFailureBackoffLeft(vm, now)
	startUnlessBackoff := func() decision {
		if backoff > 0 {
			return decision{action: none, after: backoff}
		}
		return decision{action: start}
	}
	switch strategy {
	case v1.RunStrategyAlways:
		if vmi == nil {
			return startUnlessBackoff(), nil
		}
		if (stopAsked || vmi.IsFinal()) && !deleting {
			return decision{action: stop}, nil
		}
		return decision{}, nil
	case v1.RunStrategyRerunOnFailure:
		if vmi != nil {
			if deleting || !(stopAsked || vmi.IsFinal()) {
				return decision{}, nil
			}
			// As KubeVirt, a failed VMI gets its start request even when a
			// stop request named it; one start request is enough.
			if vmi.Status.Phase == v1.Failed && !hasStartRequest(vm) {
				return decision{action: stopAndRequestStart}, nil
			}
			return decision{action: stop}, nil
		}
		// Coming from another run strategy, the VM starts.
		if !hasStartRequest(vm) && vm.Status.RunStrategy == strategy {
			return decision{}, nil
		}
		return startUnlessBackoff(), nil
	case v1.RunStrategyManual:
		if vmi != nil {
			if stopAsked && !deleting {
				return decision{action: stop}, nil
			}
			return decision{}, nil
		}
		if hasStartRequest(vm) {
			return decision{action: start}, nil
		}
		return decision{}, nil
	case v1.RunStrategyHalted:
		if vmi == nil {
			if hasStartRequest(vm) {
				return decision{action: setAlways}, nil
			}
			return decision{}, nil
		}
		if deleting {
			return decision{}, nil
		}
		return decision{action: stop}, nil
	case v1.RunStrategyOnce:
		if vmi == nil {
			return decision{action: start}, nil
		}
		return decision{}, nil
	}
	return decision{}, fmt.Errorf("unknown runstrategy: %s", strategy)
}

// hasStartRequest tells whether the first state change request of vm is a
// start.
func hasStartRequest(vm *v1.VirtualMachine) bool {
	r := vm.Status.StateChangeRequests
	return len(r) > 0 && r[0].Action == v1.StartRequest
}

// hasStartPausedRequest tells whether the first state change request of
// vm is a start with the guest paused (virtctl start --paused).
func hasStartPausedRequest(vm *v1.VirtualMachine) bool {
	r := vm.Status.StateChangeRequests
	return hasStartRequest(vm) && r[0].Data[v1.StartRequestDataPausedKey] == v1.StartRequestDataPausedTrue
}

// hasStopRequestFor tells whether the first state change request of vm is
// a stop of vmi (by its UID): a stop names the VMI it stops, so that it
// never stops the VMI that replaced it.
func hasStopRequestFor(vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance) bool {
	r := vm.Status.StateChangeRequests
	return len(r) > 0 && r[0].Action == v1.StopRequest && r[0].UID != nil && *r[0].UID == vmi.UID
}
