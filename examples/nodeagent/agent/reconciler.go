package agent

import (
	"context"
	"errors"
	"log/slog"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
)

// Finalizer is the agent's finalizer on each VMI it runs: while it is
// there, the VMI may have a domain and a state folder on its node. The
// agent removes it once both are gone.
const Finalizer = nodeapi.Finalizer

// Retry intervals the reconciler asks for beside its rate-limited retries
// on error.
const (
	// conflictRetry: the VMI's domain belongs to someone else; look again
	// later (retrying at once cannot help).
	conflictRetry = time.Minute
	// shutdownSlack is added to a VMI's grace period before the reconciler
	// looks again whether its guest is off (libvirt's event usually says
	// so first).
	shutdownSlack = 5 * time.Second
	// orphanRetry: how often a running guest whose VMI is gone is looked
	// at while it shuts down (its grace period is in its domain only).
	orphanRetry = 10 * time.Second
)

// vmiReconciler runs the VMIs bound to the node: it reads them from the
// agent's cache (this node's VMIs only), holds its finalizer on them, calls
// the launcher (Sync, Shutdown, Delete) and reports the outcome in their
// status. Its work on one VMI can take as long as libvirt takes to start
// a guest; statusReconciler writes what libvirt reports meanwhile.
type vmiReconciler struct {
	*writer
	client   client.Reader
	launcher *launcher.Launcher
	view     *launcherView
	synced   *syncMemo
	log      *slog.Logger
}

// Reconcile brings one VMI of this node, or what is left on the host of
// one that is gone, to what its object says.
func (r *vmiReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var vmi v1.VirtualMachineInstance
	err := r.client.Get(ctx, req.NamespacedName, &vmi)
	switch {
	case apierrors.IsNotFound(err):
		return r.removeOrphan(ctx, req.NamespacedName)
	case err != nil:
		return reconcile.Result{}, err
	case r.migrations.away(&vmi):
		return reconcile.Result{}, nil // migrating away, or gone: the migration's (migrations)
	case vmi.DeletionTimestamp != nil:
		return r.finalize(ctx, &vmi)
	case domain.IsFinal(vmi.Status.Phase):
		return reconcile.Result{}, r.removeEnded(ctx, &vmi)
	}
	took := false
	if !controllerutil.ContainsFinalizer(&vmi, Finalizer) {
		if err := r.take(ctx, &vmi); err != nil {
			return ignoreStale(err)
		}
		took = true
	}
	return r.run(ctx, &vmi, took)
}

// take writes, in one patch, the agent's finalizer on vmi and, for a VMI
// that has not reached it, the phase Scheduled on this node: KubeVirt's
// Scheduled, a VMI its node has taken and whose domain it is about to
// create. One write instead of two (a finalizer, then the Scheduled of a
// defined domain): the density test counts them.
func (r *vmiReconciler) take(ctx context.Context, vmi *v1.VirtualMachineInstance) error {
	orig := vmi.DeepCopy()
	controllerutil.AddFinalizer(vmi, Finalizer)
	if phaseRank[vmi.Status.Phase] < phaseRank[v1.Scheduled] {
		vmi.Status = desiredStatus(vmi.Status, v1.VirtualMachineInstanceStatus{Phase: v1.Scheduled}, r.node, syncResult{Unknown: true}, time.Now())
	}
	if err := r.patch(ctx, vmi, orig); err != nil {
		return err
	}
	r.metrics.observeTransitions(vmi, newPhases(orig.Status, vmi.Status))
	return nil
}

// run makes the launcher run vmi (Sync) and reports the result in its
// status. took says that this reconcile has just written vmi (its
// finalizer): that write's event brings vmi back, so a Sync that succeeds
// leaves the report to that next reconcile, which reads the object as it
// is by then — statusReconciler has written what libvirt reported during
// the Sync meanwhile —, instead of writing from this copy, which that
// write has made stale (a refused patch, and one more request per VMI).
func (r *vmiReconciler) run(ctx context.Context, vmi *v1.VirtualMachineInstance, took bool) (reconcile.Result, error) {
	if vmi.Status.Phase == v1.Running {
		// It ran here. Without a domain now, it is gone: it must not be
		// started a second time. (A Scheduled VMI without a domain is one
		// taken whose domain is not defined yet: Sync defines it, as
		// KubeVirt's virt-handler does for a Scheduled VMI.)
		observed, err := r.launcher.Status(ctx, vmi)
		if err != nil {
			return r.statusError(ctx, vmi, err)
		}
		if observed.Phase == v1.Pending {
			r.log.Warn("nodeagent: the domain of a VMI that ran here is gone", "vmi", key(vmi))
			gone := v1.VirtualMachineInstanceStatus{Phase: v1.Failed, Reason: reasonDomainVanished}
			return ignoreStale(r.report(ctx, vmi, gone, syncResult{}))
		}
		if r.synced.has(vmi) && !needsSync(observed) {
			// Synced as it is, and running as it should: Sync would change
			// nothing (and it is not free: a plan, and libvirt calls on the
			// launcher's one control connection, which start calls share).
			return ignoreStale(r.report(ctx, vmi, observed, syncResult{}))
		}
	}

	err := r.sync(ctx, vmi)
	if err == nil {
		r.synced.record(vmi)
		if took && syncFailure(vmi.Status) == nil {
			return reconcile.Result{}, nil
		}
	}
	var result reconcile.Result
	var retry error
	switch {
	case err == nil:
	case errors.Is(err, launcher.ErrDeleted):
		return reconcile.Result{}, nil // a Delete overtook it: the next reconcile sees why
	case errors.Is(err, launcher.ErrInvalid):
		// Permanent: the VMI fails once, with every field error in its
		// Synchronized condition, and is not retried.
		return ignoreStale(r.report(ctx, vmi, v1.VirtualMachineInstanceStatus{}, syncResult{Err: err, Refused: true}))
	case errors.Is(err, launcher.ErrConflict):
		result.RequeueAfter = conflictRetry
	case errors.Is(err, launcher.ErrRestartRequired):
		// Permanent for this spec: the domain runs on as it was, the
		// fields that need a restart are in the Synchronized condition
		// (kept: the VMI is not recorded as synced), and it is not
		// retried with backoff.
	default: // ErrHostNotReady, ErrUnavailable, a deadline: retried with backoff
		retry = err
	}
	observed, serr := r.launcher.Status(ctx, vmi)
	if serr != nil {
		if retry != nil {
			return reconcile.Result{}, retry
		}
		return r.statusError(ctx, vmi, serr)
	}
	if err := r.report(ctx, vmi, observed, syncResult{Err: err}); err != nil && !stale(err) {
		return reconcile.Result{}, err
	}
	return result, retry
}

// sync is launcher.Sync. A domain of an earlier VMI of the same name
// (another UID) that still runs here is removed first: its VMI is gone,
// since this one took its name.
func (r *vmiReconciler) sync(ctx context.Context, vmi *v1.VirtualMachineInstance) error {
	err := r.launcher.Sync(ctx, vmi.DeepCopy())
	var conflict *launcher.ConflictError
	if errors.As(err, &conflict) && conflict.Owner == r.launcher.Owner() {
		r.log.Info("nodeagent: removing the domain of an earlier VMI of the same name", "vmi", key(vmi), "reason", conflict.Reason)
		if err := r.launcher.Delete(ctx, vmi); err != nil {
			return err
		}
		err = r.launcher.Sync(ctx, vmi.DeepCopy())
	}
	return err
}

// statusError handles an error reading a VMI's status from the launcher:
// a domain of the same name that is another's is reported on the VMI and
// looked at again later; anything else is retried with backoff.
func (r *vmiReconciler) statusError(ctx context.Context, vmi *v1.VirtualMachineInstance, err error) (reconcile.Result, error) {
	if !errors.Is(err, launcher.ErrConflict) {
		return reconcile.Result{}, err
	}
	if err := r.report(ctx, vmi, vmi.Status, syncResult{Err: err}); err != nil && !stale(err) {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: conflictRetry}, nil
}

// finalize takes a VMI being deleted off the host: it asks a running
// guest to shut down (the launcher destroys it at the end of its grace
// period), and once it is off reports how it ended (deletedEnd), removes
// its domain and state folder, and drops the agent's finalizer.
func (r *vmiReconciler) finalize(ctx context.Context, vmi *v1.VirtualMachineInstance) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(vmi, Finalizer) {
		return reconcile.Result{}, nil
	}
	r.synced.forget(client.ObjectKeyFromObject(vmi))
	observed, err := r.launcher.Status(ctx, vmi)
	switch {
	case errors.Is(err, launcher.ErrConflict):
		// The domain of that name is another's: nothing of this VMI's is
		// on the host.
		r.record(vmi, eventSyncFailed, err.Error())
		return ignoreStale(r.dropFinalizer(ctx, vmi))
	case err != nil:
		return reconcile.Result{}, err
	}
	if observed.Phase == v1.Running {
		if err := r.launcher.Shutdown(ctx, vmi); err != nil && !errors.Is(err, launcher.ErrNoDomain) {
			return reconcile.Result{}, err
		}
		r.record(vmi, eventShuttingDown, "")
		if err := r.report(ctx, vmi, observed, syncResult{}); err != nil && !stale(err) {
			return reconcile.Result{}, err
		}
		return reconcile.Result{RequeueAfter: gracePeriod(vmi) + shutdownSlack}, nil
	}
	if err := r.report(ctx, vmi, deletedEnd(observed), syncResult{}); err != nil {
		return ignoreStale(err)
	}
	if err := r.launcher.Delete(ctx, vmi); err != nil {
		return reconcile.Result{}, err
	}
	r.record(vmi, eventDeleted, "")
	return ignoreStale(r.dropFinalizer(ctx, vmi))
}

// removeEnded removes the domain and state folder of a VMI that reached a
// final phase, as KubeVirt frees a node of an ended VMI; the object stays
// until it is deleted. The object's final phase is what keeps the VMI from
// running again: a VMI in a final phase is never synced. Only a VMI read
// back final is cleaned up, so no later (cached) read of it can be older
// than its final status.
func (r *vmiReconciler) removeEnded(ctx context.Context, vmi *v1.VirtualMachineInstance) error {
	r.synced.forget(client.ObjectKeyFromObject(vmi))
	return r.launcher.Delete(ctx, vmi)
}

// removeOrphan takes care of what the launcher has of a VMI whose object
// is gone (deleted while no agent ran, or no longer bound to this node): a
// running guest is asked to shut down, with the grace period its domain
// recorded; then the domain and state folder are removed.
func (r *vmiReconciler) removeOrphan(ctx context.Context, name types.NamespacedName) (reconcile.Result, error) {
	r.synced.forget(name)
	if r.migrations.incoming(ctx, name) {
		return reconcile.Result{RequeueAfter: orphanRetry}, nil // migrating here: not an orphan
	}
	ref := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name}}
	if r.view.running(name) {
		err := r.launcher.Shutdown(ctx, ref)
		switch {
		case err == nil:
			r.log.Info("nodeagent: shutting down the guest of a VMI that is gone", "vmi", name.String())
			return reconcile.Result{RequeueAfter: orphanRetry}, nil
		case errors.Is(err, launcher.ErrConflict):
			return reconcile.Result{}, nil
		case !errors.Is(err, launcher.ErrNoDomain):
			return reconcile.Result{}, err
		}
	}
	if err := r.launcher.Delete(ctx, ref); err != nil && !errors.Is(err, launcher.ErrConflict) {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}

// gracePeriod is vmi's termination grace period (KubeVirt's default when
// unset).
func gracePeriod(vmi *v1.VirtualMachineInstance) time.Duration {
	s := v1.DefaultGracePeriodSeconds
	if t := vmi.Spec.TerminationGracePeriodSeconds; t != nil {
		s = *t
	}
	return time.Duration(s) * time.Second
}

// key is vmi's namespace/name.
func key(vmi *v1.VirtualMachineInstance) string {
	return vmi.Namespace + "/" + vmi.Name
}
