// Package migration is KubeVirt's migration controller
// (virt-controller's pkg/virt-controller/watch/migration) for the node
// agents: it moves a VirtualMachineInstanceMigration through KubeVirt's
// phases while the agents migrate its VMI.
//
// A new migration gets KubeVirt's finalizer and is Pending; once its VMI
// runs and no other migration of it is under way, the controller picks the
// target (Scheduling): a schedulable Node (kubevirt.io/schedulable=true)
// other than the VMI's, that is not cordoned, whose NoSchedule taints
// (a drained node's kubevirt.io/drain) the VMI tolerates, and that the
// VMI's nodeSelector, the migration's addedNodeSelector and the VMI's
// required node affinity fit (nodeapi.Fits), the first by name. It writes the VMI's
// status.migrationState (migrationUid, sourceNode, targetNode): Scheduled,
// then PreparingTarget. The source node's agent takes it from there: it
// writes the target's address (TargetReady) and the start (Running), and
// the end: completed (Succeeded; the VMI's nodeName and
// kubevirt.io/nodeName label then name the target) or failed (Failed). The
// migration's status.migrationState mirrors the VMI's; each phase entered
// has its transition timestamp, also those passed between two reads.
//
// Deleting a migration that has not ended asks the agent to abort it
// (the VMI's migrationState.abortRequested, the migration's
// migrationAbortRequested condition); the finalizer goes once it ended,
// and at once for a migration that ended or never began.
package migration

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	v1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
)

// noTargetRetry is how soon a migration without a target looks again.
const noTargetRetry = 5 * time.Second

// Options configure the migration controller.
type Options struct {
	// Scheduling are the cluster's choices of what a VMI requires of its
	// target node (nodeapi.Scheduling.Fits); the zero value is KubeVirt's
	// default.
	Scheduling nodeapi.Scheduling
	// Logger receives the controller's log; nil is silent.
	Logger *slog.Logger
}

// Add adds the migration controller to mgr.
func Add(mgr manager.Manager, opts Options) error {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &reconciler{client: mgr.GetClient(), fresh: mgr.GetAPIReader(), scheduling: opts.Scheduling, log: opts.Logger}
	// A VMI's change looks at its migrations.
	ofVMI := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		var list v1.VirtualMachineInstanceMigrationList
		if err := mgr.GetClient().List(ctx, &list, client.InNamespace(o.GetNamespace())); err != nil {
			return nil
		}
		var out []reconcile.Request
		for _, m := range list.Items {
			if m.Spec.VMIName == o.GetName() {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&m)})
			}
		}
		return out
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("migration").
		For(&v1.VirtualMachineInstanceMigration{}).
		Watches(&v1.VirtualMachineInstance{}, ofVMI).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1, SkipNameValidation: ptr.To(true)}).
		Complete(r)
}

// reconciler is the migration controller.
type reconciler struct {
	client client.Client
	// fresh reads from the API server itself: a VMI whose cached copy
	// does not show yet the migrationState this controller just wrote.
	fresh      client.Reader
	scheduling nodeapi.Scheduling
	log        *slog.Logger
}

// order is the phases of a migration that succeeds, in order.
var order = []v1.VirtualMachineInstanceMigrationPhase{
	v1.MigrationPending, v1.MigrationScheduling, v1.MigrationScheduled, v1.MigrationPreparingTarget,
	v1.MigrationTargetReady, v1.MigrationRunning, v1.MigrationSucceeded,
}

// final tells whether a migration in phase p has ended.
func final(p v1.VirtualMachineInstanceMigrationPhase) bool {
	return p == v1.MigrationSucceeded || p == v1.MigrationFailed
}

// Reconcile moves one migration on.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var mig v1.VirtualMachineInstanceMigration
	if err := r.client.Get(ctx, req.NamespacedName, &mig); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var vmi v1.VirtualMachineInstance
	err := r.client.Get(ctx, client.ObjectKey{Namespace: mig.Namespace, Name: mig.Spec.VMIName}, &vmi)
	switch {
	case apierrors.IsNotFound(err):
		vmi = v1.VirtualMachineInstance{}
	case err != nil:
		return reconcile.Result{}, err
	}
	ours := vmi.Status.MigrationState != nil && vmi.Status.MigrationState.MigrationUID == mig.UID
	if mig.DeletionTimestamp != nil {
		return reconcile.Result{}, r.deleting(ctx, &mig, &vmi, ours)
	}
	if final(mig.Status.Phase) {
		return reconcile.Result{}, nil
	}
	if !controllerutil.ContainsFinalizer(&mig, v1.VirtualMachineInstanceMigrationFinalizer) {
		orig := mig.DeepCopy()
		controllerutil.AddFinalizer(&mig, v1.VirtualMachineInstanceMigrationFinalizer)
		if err := r.client.Patch(ctx, &mig, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	switch {
	case vmi.UID == "" || vmi.DeletionTimestamp != nil || domain.IsFinal(vmi.Status.Phase):
		return reconcile.Result{}, r.advance(ctx, &mig, nil, v1.MigrationFailed)
	case ours:
		return reconcile.Result{}, r.advance(ctx, &mig, vmi.Status.MigrationState, phaseOf(vmi.Status.MigrationState))
	case phaseIndex(mig.Status.Phase) >= phaseIndex(v1.MigrationScheduled):
		// The VMI's migrationState is another's now — unless the cache
		// has not caught up with the one schedule wrote: the API server
		// tells.
		if err := r.fresh.Get(ctx, client.ObjectKeyFromObject(&vmi), &vmi); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		if ms := vmi.Status.MigrationState; ms != nil && ms.MigrationUID == mig.UID {
			return reconcile.Result{}, r.advance(ctx, &mig, ms, phaseOf(ms))
		}
		return reconcile.Result{}, r.advance(ctx, &mig, nil, v1.MigrationFailed)
	}
	return r.schedule(ctx, &mig, &vmi)
}

// schedule picks the target of a migration not begun, and writes it to
// the VMI's migrationState.
func (r *reconciler) schedule(ctx context.Context, mig *v1.VirtualMachineInstanceMigration, vmi *v1.VirtualMachineInstance) (reconcile.Result, error) {
	if ms := vmi.Status.MigrationState; vmi.Status.Phase != v1.Running || vmi.Status.NodeName == "" || (ms != nil && !ms.Completed) {
		// Not running yet, or another migration is under way.
		return reconcile.Result{RequeueAfter: noTargetRetry}, r.advance(ctx, mig, nil, v1.MigrationPending)
	}
	target, err := r.target(ctx, vmi, mig.Spec.AddedNodeSelector)
	if err != nil || target == "" {
		if err == nil {
			r.log.Info("migration: no node fits the VMI", "migration", mig.Namespace+"/"+mig.Name, "vmi", vmi.Name)
		}
		return reconcile.Result{RequeueAfter: noTargetRetry}, r.advance(ctx, mig, nil, v1.MigrationScheduling)
	}
	orig := vmi.DeepCopy()
	vmi.Status.MigrationState = &v1.VirtualMachineInstanceMigrationState{
		MigrationUID: mig.UID, SourceNode: vmi.Status.NodeName, TargetNode: target,
	}
	if err := r.client.Patch(ctx, vmi, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{RequeueAfter: time.Second}, nil
		}
		return reconcile.Result{}, err
	}
	r.log.Info("migration: target chosen", "migration", mig.Namespace+"/"+mig.Name, "vmi", vmi.Name, "source", orig.Status.NodeName, "target", target)
	return reconcile.Result{}, r.advance(ctx, mig, vmi.Status.MigrationState, v1.MigrationPreparingTarget)
}

// target is the name of the node vmi migrates to, "" when none fits.
func (r *reconciler) target(ctx context.Context, vmi *v1.VirtualMachineInstance, added map[string]string) (string, error) {
	var nodes k8sv1.NodeList
	if err := r.client.List(ctx, &nodes, client.MatchingLabels{v1.NodeSchedulable: "true"}); err != nil {
		return "", err
	}
	sort.Slice(nodes.Items, func(i, j int) bool { return nodes.Items[i].Name < nodes.Items[j].Name })
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if n.Name == vmi.Status.NodeName {
			continue
		}
		ok, err := r.scheduling.Fits(vmi, n, added)
		if err != nil {
			return "", err
		}
		if ok {
			return n.Name, nil
		}
	}
	return "", nil
}

// phaseOf is the phase of a migration whose VMI's migrationState is ms.
func phaseOf(ms *v1.VirtualMachineInstanceMigrationState) v1.VirtualMachineInstanceMigrationPhase {
	switch {
	case ms.Completed && ms.Failed:
		return v1.MigrationFailed
	case ms.Completed:
		return v1.MigrationSucceeded
	case ms.StartTimestamp != nil:
		return v1.MigrationRunning
	case ms.TargetNodeAddress != "":
		return v1.MigrationTargetReady
	default:
		return v1.MigrationPreparingTarget
	}
}

// phaseIndex is p's place in order; -1 for the unset phase and Failed.
func phaseIndex(p v1.VirtualMachineInstanceMigrationPhase) int {
	return slices.Index(order, p)
}

// advance writes phase and ms to mig's status, with a transition
// timestamp for each phase entered: those of order between mig's phase
// and phase, then phase. A phase behind mig's is not gone back to.
func (r *reconciler) advance(ctx context.Context, mig *v1.VirtualMachineInstanceMigration, ms *v1.VirtualMachineInstanceMigrationState, phase v1.VirtualMachineInstanceMigrationPhase) error {
	orig := mig.DeepCopy()
	now := metav1.Now()
	enter := func(p v1.VirtualMachineInstanceMigrationPhase) {
		mig.Status.Phase = p
		mig.Status.PhaseTransitionTimestamps = append(mig.Status.PhaseTransitionTimestamps,
			v1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{Phase: p, PhaseTransitionTimestamp: now})
	}
	switch cur, want := phaseIndex(mig.Status.Phase), phaseIndex(phase); {
	case phase == v1.MigrationFailed:
		enter(phase)
	case want > cur:
		for _, p := range order[cur+1 : want+1] {
			enter(p)
		}
	}
	if ms != nil {
		mig.Status.MigrationState = ms.DeepCopy()
	}
	if equality.Semantic.DeepEqual(orig.Status, mig.Status) {
		return nil
	}
	if mig.Status.Phase != orig.Status.Phase {
		r.log.Info("migration: phase", "migration", mig.Namespace+"/"+mig.Name, "phase", mig.Status.Phase)
	}
	return client.IgnoreNotFound(r.client.Status().Patch(ctx, mig, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))
}

// deleting handles a migration being deleted: one under way is aborted
// (the VMI's abortRequested), and the finalizer goes once it is not.
func (r *reconciler) deleting(ctx context.Context, mig *v1.VirtualMachineInstanceMigration, vmi *v1.VirtualMachineInstance, ours bool) error {
	if !controllerutil.ContainsFinalizer(mig, v1.VirtualMachineInstanceMigrationFinalizer) {
		return nil
	}
	if ours && !vmi.Status.MigrationState.Completed && vmi.DeletionTimestamp == nil {
		if !vmi.Status.MigrationState.AbortRequested {
			orig := vmi.DeepCopy()
			vmi.Status.MigrationState.AbortRequested = true
			if err := r.client.Patch(ctx, vmi, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
				return client.IgnoreNotFound(err)
			}
			r.log.Info("migration: abort requested", "migration", mig.Namespace+"/"+mig.Name, "vmi", vmi.Name)
		}
		return r.abortCondition(ctx, mig)
	}
	orig := mig.DeepCopy()
	controllerutil.RemoveFinalizer(mig, v1.VirtualMachineInstanceMigrationFinalizer)
	return client.IgnoreNotFound(r.client.Patch(ctx, mig, client.MergeFrom(orig)))
}

// abortCondition adds KubeVirt's migrationAbortRequested condition to mig.
func (r *reconciler) abortCondition(ctx context.Context, mig *v1.VirtualMachineInstanceMigration) error {
	for _, c := range mig.Status.Conditions {
		if c.Type == v1.VirtualMachineInstanceMigrationAbortRequested {
			return nil
		}
	}
	orig := mig.DeepCopy()
	mig.Status.Conditions = append(mig.Status.Conditions, v1.VirtualMachineInstanceMigrationCondition{
		Type: v1.VirtualMachineInstanceMigrationAbortRequested, Status: k8sv1.ConditionTrue,
		LastTransitionTime: metav1.Now(), Message: fmt.Sprintf("the migration of %s was deleted before it ended", mig.Spec.VMIName),
	})
	return client.IgnoreNotFound(r.client.Status().Patch(ctx, mig, client.MergeFrom(orig)))
}
