package agent

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// streamsReconciler opens a VMI's stream ports (streamServers) while the
// launcher reports it Running on this node — paused or not, during a
// graceful shutdown too, so that one can watch the guest go down — and
// closes them when its guest stops, its object is gone or no longer bound
// here. It is fed by the API server's events of the node's VMIs and by
// the launcher's Watch channel (libvirt's), so ports follow the guest
// without polling. The ports are the agent's alone: nothing is written to
// the API server.
type streamsReconciler struct {
	client  client.Reader
	view    *launcherView
	streams *streamServers
	ctx     context.Context // the agent's: ports live at most as long
}

// Reconcile opens or closes the ports of one VMI.
func (r *streamsReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var vmi v1.VirtualMachineInstance
	err := r.client.Get(ctx, req.NamespacedName, &vmi)
	if apierrors.IsNotFound(err) {
		r.streams.close(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	observed, ok := r.view.status(req.NamespacedName, vmi.UID)
	if !ok || observed.Phase != v1.Running {
		r.streams.close(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, r.streams.open(r.ctx, &vmi)
}
