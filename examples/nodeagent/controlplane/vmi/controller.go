// Package vmi is the part of KubeVirt's VirtualMachineInstance controller
// (virt-controller's pkg/virt-controller/watch/vmi) that holds where node
// agents run VMIs without pods: the end of a VMI no node has, and the
// finalizers KubeVirt's control plane puts on VMIs and takes off them at
// their end.
//
// A node agent takes a VMI from the moment it is bound to its node (label
// kubevirt.io/nodeName), and writes its phases from then on; this
// controller never touches a bound VMI's phase. What it does:
//
//   - A new VMI (phase unset or Pending, not deleting) whose guest needs a
//     fixed TSC frequency (nodeapi.NeedsTopologyHints) gets
//     status.topologyHints.tscFrequency, the lowest TSC frequency of the
//     schedulable nodes and of those running VMIs
//     (nodeapi.TopologyHints), as KubeVirt's topology hinter gives it
//     before the VMI is scheduled; agents claim such a VMI only once it
//     has them, and only onto a node whose TSC gives that frequency.
//   - A VMI deleted before any node agent took it (phase unset or Pending,
//     without the agent's finalizer: unbound, or claimed by an agent that
//     died or was too late) will never run: it becomes Failed, as KubeVirt
//     fails a deleted VMI that has no pod. (No agent binds a VMI being
//     deleted, and none can put its finalizer on one, so the two never race
//     for it.)
//   - A VMI that ended (Succeeded, Failed) loses KubeVirt's
//     kubevirt.io/foregroundDeleteVirtualMachine finalizer, which the
//     mutating webhook gave it, as KubeVirt removes it once the VMI's pods
//     are gone (here the node agent frees the node of an ended VMI; its own
//     finalizer covers what it still has to clean up).
//   - An ended VMI whose owning VM is gone loses the VM controller's
//     finalizer too (the VM controller removes it otherwise).
//
// Every write is a JSON merge patch carrying the resourceVersion it was
// computed from, as the node agent's.
package vmi

import (
	"context"
	"log/slog"
	"slices"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	v1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
)

// DefaultWorkers is virt-controller's number of VMI workers.
const DefaultWorkers = 10

// Options configure the VMI controller.
type Options struct {
	// Workers is how many VMIs are reconciled at once; 0: DefaultWorkers.
	Workers int
	// Logger receives the controller's log; nil is silent.
	Logger *slog.Logger
}

// Add adds the VMI controller to mgr.
func Add(mgr manager.Manager, opts Options) error {
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("virtualmachineinstance").
		For(&v1.VirtualMachineInstance{}).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: opts.Workers,
			RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](200*time.Millisecond, 30*time.Second),
			SkipNameValidation:      ptr.To(true),
		}).
		Complete(&reconciler{client: mgr.GetClient(), log: opts.Logger, now: time.Now})
}

// reconciler is the VMI controller.
type reconciler struct {
	client client.Client
	log    *slog.Logger
	now    func() time.Time
}

// finalizers are the finalizers KubeVirt's VMI controller removes from an
// ended VMI.
var finalizers = []string{v1.VirtualMachineInstanceFinalizer, v1.DeprecatedVirtualMachineInstanceFinalizer}

// Reconcile applies the rules of the package doc to one VMI.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var cached v1.VirtualMachineInstance
	if err := r.client.Get(ctx, req.NamespacedName, &cached); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	vmi := lifecycle(&cached, func() bool { return r.hasOwnerVM(ctx, &cached) }, r.now())
	hint := hinted(vmi)
	if hint {
		hints, err := r.topologyHints(ctx)
		if err != nil {
			return reconcile.Result{}, err
		}
		vmi.Status.TopologyHints = hints
		r.log.Info("controlplane: a VMI that needs a fixed TSC frequency gets topology hints", "vmi", req.String(), "tscFrequency", *hints.TSCFrequency)
	}
	if vmi.Status.Phase == cached.Status.Phase && slices.Equal(vmi.Finalizers, cached.Finalizers) && !hint {
		return reconcile.Result{}, nil
	}
	if vmi.Status.Phase != cached.Status.Phase {
		r.log.Info("controlplane: a VMI deleted before a node took it fails", "vmi", req.String())
	}
	err := r.client.Patch(ctx, vmi, client.MergeFromWithOptions(&cached, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil // its own event brings it back
	}
	return reconcile.Result{}, err
}

// lifecycle returns a copy of vmi as the rules of the package doc want it:
// Failed when it is deleted before any node took it, without the
// finalizers KubeVirt's VMI controller removes once it ended (and the VM
// controller's, when ownerVM says its VM is gone).
func lifecycle(vmi *v1.VirtualMachineInstance, ownerVM func() bool, now time.Time) *v1.VirtualMachineInstance {
	out := vmi.DeepCopy()
	if neverRan(out) {
		out.Status.Phase = v1.Failed
		out.Status.PhaseTransitionTimestamps = append(out.Status.PhaseTransitionTimestamps,
			v1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: v1.Failed, PhaseTransitionTimestamp: metav1.NewTime(now)})
	}
	if out.IsFinal() {
		drop := slices.Clone(finalizers)
		if !ownerVM() {
			drop = append(drop, v1.VirtualMachineControllerFinalizer)
		}
		out.Finalizers = slices.DeleteFunc(out.Finalizers, func(f string) bool { return slices.Contains(drop, f) })
	}
	return out
}

// neverRan tells whether vmi is being deleted before any node agent took
// it — unbound, or bound (an agent's claim) but without the agent's
// finalizer, which an agent puts on before it makes anything for the VMI
// and which the API server lets no one add to an object being deleted: it
// will never run.
func neverRan(vmi *v1.VirtualMachineInstance) bool {
	return vmi.DeletionTimestamp != nil && vmi.IsUnprocessed() && !slices.Contains(vmi.Finalizers, nodeapi.Finalizer)
}

// hinted tells whether vmi is to get topology hints now: it is new, not
// deleting, and needs them (KubeVirt's hinter gives them to a VMI that
// becomes Pending, before its pod exists).
func hinted(vmi *v1.VirtualMachineInstance) bool {
	return vmi.IsUnprocessed() && vmi.DeletionTimestamp == nil && nodeapi.NeedsTopologyHints(vmi)
}

// topologyHints are the topology hints of a VMI that needs them, from the
// cached Nodes and VMIs.
func (r *reconciler) topologyHints(ctx context.Context) (*v1.TopologyHints, error) {
	var nodes k8sv1.NodeList
	if err := r.client.List(ctx, &nodes); err != nil {
		return nil, err
	}
	var vmis v1.VirtualMachineInstanceList
	if err := r.client.List(ctx, &vmis); err != nil {
		return nil, err
	}
	running := map[string]bool{}
	for i := range vmis.Items {
		if n := vmis.Items[i].Status.NodeName; n != "" {
			running[n] = true
		}
	}
	return nodeapi.TopologyHints(nodes.Items, func(node string) bool { return running[node] }), nil
}

// hasOwnerVM tells whether the VM that controls vmi still exists (the same
// VM: its UID).
func (r *reconciler) hasOwnerVM(ctx context.Context, vmi *v1.VirtualMachineInstance) bool {
	ref := metav1.GetControllerOf(vmi)
	if ref == nil || ref.Kind != v1.VirtualMachineGroupVersionKind.Kind {
		return false
	}
	var vm v1.VirtualMachine
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: vmi.Namespace, Name: ref.Name}, &vm); err != nil {
		// Gone, or unknown: keep the finalizer unless it is surely gone.
		return !apierrors.IsNotFound(err)
	}
	return vm.UID == ref.UID
}
