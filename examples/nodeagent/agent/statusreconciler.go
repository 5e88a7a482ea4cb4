package agent

import (
	"context"

	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

// statusReconciler writes what the launcher reports of a VMI as soon as it
// reports it: the status its Watch channel delivered last (launcherView),
// without reading libvirt again. It is fed by that channel only, and works
// apart from vmiReconciler, whose Sync of the same VMI may still be under
// way: libvirt says a guest runs about 200 ms into a start call that
// returns 350 ms later on an idle host, seconds later on a busy one, and
// the status says Running as soon as libvirt does.
//
// It writes only VMIs that vmiReconciler has taken (they carry the
// finalizer) and that live; it keeps their Synchronized condition as it
// is (it does not sync) and leaves a VMI without a domain to
// vmiReconciler, and a domain defined but not started to the Sync under
// way (it records the Created Event). The two write with preconditions: when both write at
// once, one is refused and its VMI comes back through the other's event.
type statusReconciler struct {
	*writer
	client client.Reader
	view   *launcherView
}

// Reconcile writes the launcher's last status of one VMI.
func (r *statusReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var vmi v1.VirtualMachineInstance
	if err := r.client.Get(ctx, req.NamespacedName, &vmi); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if vmi.DeletionTimestamp != nil || domain.IsFinal(vmi.Status.Phase) {
		return reconcile.Result{}, nil
	}
	observed, ok := r.view.status(req.NamespacedName, vmi.UID)
	switch {
	case !ok || observed.Phase == v1.Pending:
		return reconcile.Result{}, nil // no domain (yet, or any more): vmiReconciler's to judge
	case observed.Phase == v1.Scheduled:
		// Defined, not started: the Sync that defined it (vmiReconciler
		// took the VMI first, so the cache may not show its finalizer
		// yet) is under way and starts it next, or fails and reports.
		// vmiReconciler wrote Scheduled when it took the VMI; writing the
		// defined domain's conditions now would be one more write per
		// VMI, overwritten a moment later by Running.
		r.record(&vmi, eventCreated, "")
		return reconcile.Result{}, nil
	case !controllerutil.ContainsFinalizer(&vmi, Finalizer):
		return reconcile.Result{}, nil
	}
	return ignoreStale(r.report(ctx, &vmi, observed, syncResult{Unknown: true}))
}
