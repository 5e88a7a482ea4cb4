package agent

import (
	k8sv1 "k8s.io/api/core/v1"
	v1 "kubevirt.io/api/core/v1"
)

// eventSpec is one kind of Kubernetes Event the agent records on a VMI.
type eventSpec struct {
	Type    string // k8sv1.EventTypeNormal or EventTypeWarning
	Reason  string
	Message string
}

// phaseEvents are the Events recorded when a VMI enters each phase, with
// KubeVirt's virt-handler's reasons and messages where it has one
// (Started, Stopped). Scheduled has none: the agent enters it when it
// takes the VMI, before its domain is defined (eventCreated).
var phaseEvents = map[v1.VirtualMachineInstancePhase]eventSpec{
	v1.Pending:   {k8sv1.EventTypeNormal, "Pending", "VirtualMachineInstance waits for the host."},
	v1.Running:   {k8sv1.EventTypeNormal, v1.Started.String(), "VirtualMachineInstance started."},
	v1.Succeeded: {k8sv1.EventTypeNormal, v1.Stopped.String(), "The VirtualMachineInstance was shut down."},
	v1.Failed:    {k8sv1.EventTypeWarning, v1.Stopped.String(), "The VirtualMachineInstance failed."},
}

// The other Events the agent records.
var (
	// eventCreated: the VMI's domain was defined (virt-handler's
	// Created), as the launcher's Watch reports it.
	eventCreated = eventSpec{k8sv1.EventTypeNormal, v1.Created.String(), "VirtualMachineInstance defined."}
	// eventSyncFailed: the launcher could not bring the VMI to its spec;
	// the message is its error (for a refused VMI, every field error with
	// its path).
	eventSyncFailed = eventSpec{k8sv1.EventTypeWarning, v1.SyncFailed.String(), ""}
	// eventShuttingDown: the guest was asked to shut down (the VMI is
	// being deleted).
	eventShuttingDown = eventSpec{k8sv1.EventTypeNormal, v1.ShuttingDown.String(), "Signaled Graceful Shutdown"}
	// eventDeleted: the VMI's domain and state folder were removed.
	eventDeleted = eventSpec{k8sv1.EventTypeNormal, v1.Deleted.String(), "VirtualMachineInstance domain and state folder removed."}
	// eventClaimed: the agent bound an unbound VMI to its node.
	eventClaimed = eventSpec{k8sv1.EventTypeNormal, "Scheduled", ""}
	// eventPaused, eventUnpaused, eventSoftRebooted: the control plane
	// paused, unpaused or soft-rebooted the VMI through the node API
	// (virt-handler's reasons and messages).
	eventPaused       = eventSpec{k8sv1.EventTypeNormal, "Paused", "VirtualMachineInstance paused"}
	eventUnpaused     = eventSpec{k8sv1.EventTypeNormal, "Unpaused", "VirtualMachineInstance unpaused"}
	eventSoftRebooted = eventSpec{k8sv1.EventTypeNormal, "SoftRebooted", "VirtualMachineInstance soft rebooted"}
)

// phaseEvent is the Event for entering phase, with the status reason in
// its message when there is one (why a VMI failed).
func phaseEvent(phase v1.VirtualMachineInstancePhase, reason string) (eventSpec, bool) {
	e, ok := phaseEvents[phase]
	if ok && reason != "" {
		e.Message += " Reason: " + reason + "."
	}
	return e, ok
}
