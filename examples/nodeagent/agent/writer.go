package agent

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// writer writes what the agent owns of its node's VMIs — status,
// finalizer — and records the Events that go with it. Every write is a
// JSON merge patch carrying the resourceVersion it was computed from.
type writer struct {
	client  client.Writer
	events  record.EventRecorder
	node    string
	metrics *agentMetrics
	// migrations are the node's migrations (nil: none): a VMI away
	// (migrating from this node, or gone) is not this node's to write.
	migrations *migrations
}

// report writes the status the VMI should have now, given what the
// launcher observed and the last sync's result, when it differs from the
// object's; then it records an Event for each phase entered, with the time
// from the VMI's creation to it, and a SyncFailed Event when the sync's
// error is new (so a refused VMI, or one retried for the same reason, gets
// one). vmi is updated to the written object. A
// conflict (the object changed since it was read) is returned as it is: the
// change's own event brings the VMI back.
func (r *writer) report(ctx context.Context, vmi *v1.VirtualMachineInstance, observed v1.VirtualMachineInstanceStatus, sync syncResult) error {
	if r.migrations.away(vmi) {
		return nil
	}
	want := desiredStatus(vmi.Status, observed, r.node, sync, time.Now())
	if equality.Semantic.DeepEqual(vmi.Status, want) {
		return nil
	}
	orig := vmi.DeepCopy()
	vmi.Status = want
	if err := r.patch(ctx, vmi, orig); err != nil {
		return err
	}
	if failed := syncFailure(want); failed != nil && !sameSyncFailure(orig.Status, want) {
		r.record(vmi, eventSyncFailed, failed.Message)
	}
	entered := newPhases(orig.Status, want)
	for _, t := range entered {
		if e, ok := phaseEvent(t.Phase, phaseReason(want, t.Phase)); ok {
			r.record(vmi, e, "")
		}
	}
	r.metrics.observeTransitions(vmi, entered)
	return nil
}

// phaseReason is status's reason when phase is its current phase.
func phaseReason(status v1.VirtualMachineInstanceStatus, phase v1.VirtualMachineInstancePhase) string {
	if status.Phase == phase {
		return status.Reason
	}
	return ""
}

// dropFinalizer removes the agent's finalizer: the API server then
// deletes the object.
func (r *writer) dropFinalizer(ctx context.Context, vmi *v1.VirtualMachineInstance) error {
	orig := vmi.DeepCopy()
	controllerutil.RemoveFinalizer(vmi, Finalizer)
	return r.patch(ctx, vmi, orig)
}

// patch writes vmi's changes from orig as a JSON merge patch that carries
// orig's resourceVersion: the API server refuses it (409 Conflict) when the
// object changed since it was read. KubeVirt's VMI CRD has no status
// subresource, so status goes through the object itself; the patch holds
// only what changed, and the precondition keeps a status computed from a
// stale copy (the cache lags behind writes) from being written.
func (r *writer) patch(ctx context.Context, vmi, orig *v1.VirtualMachineInstance) error {
	return r.client.Patch(ctx, vmi, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
}

// record records an Event of kind e on vmi; message, when set, replaces
// e's.
func (r *writer) record(vmi *v1.VirtualMachineInstance, e eventSpec, message string) {
	if message == "" {
		message = e.Message
	}
	r.events.Event(vmi, e.Type, e.Reason, message)
}

// stale tells whether a write failed because the object changed since it
// was read (409 Conflict) or is gone (404): the change's own event brings
// the VMI back, read afresh.
func stale(err error) bool {
	return apierrors.IsConflict(err) || apierrors.IsNotFound(err)
}

// ignoreStale ends a reconcile whose write found the object stale
// without an error.
func ignoreStale(err error) (reconcile.Result, error) {
	if stale(err) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, err
}
