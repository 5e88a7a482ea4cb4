// Package node is KubeVirt's node controller (virt-controller's
// pkg/virt-controller/watch/node): it declares dead the nodes whose
// agent's heartbeat is stale, so that their VMIs end and a VirtualMachine
// gets a new VMI elsewhere.
//
// A Node whose kubevirt.io/heartbeat annotation (written by its node
// agent, at least every minute) is older than the grace period is
// unresponsive: it is labelled kubevirt.io/schedulable=false (no agent
// claims for it), with a NodeUnresponsive Event, and every VMI bound to it
// that has not ended becomes Failed with reason NodeUnresponsive (an Event
// on each), as KubeVirt fails them. The VM controller then replaces the
// VMI of a VM whose run strategy wants one (Always; RerunOnFailure). Unlike
// KubeVirt, which waits for the VMI's virt-launcher pod to be gone (a
// kubelet or an operator deleting it), nothing else vouches here for the
// guest being gone, so the controller also takes the node agent's
// finalizer off those VMIs: their objects can go, and the agent that comes
// back destroys the stale domain (its VMI gone or replaced) before it
// runs anything. A Node without the annotation (no agent ever beat there)
// and a missing Node are not judged (KubeVirt fails the VMIs of a deleted
// Node; here VMIs may be bound by hand to nodes nobody registered).
// Unresponsive nodes are looked at again every recheck interval, and every
// Node at its heartbeat's deadline.
package node

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	v1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
)

// DefaultGracePeriod is KubeVirt's heartbeat timeout: a Node whose
// heartbeat is older is unresponsive.
const DefaultGracePeriod = 5 * time.Minute

// recheck is how often an unresponsive Node is looked at again
// (KubeVirt's recheck interval).
const recheck = time.Minute

// NodeUnresponsiveReason is the reason of the VMIs failed and of the
// Events recorded, KubeVirt's.
const NodeUnresponsiveReason = nodeapi.NodeUnresponsiveReason

// EventSource is the component of the controller's Events, virt-controller's
// name for it.
const EventSource = "node-controller"

// Options configure the node controller.
type Options struct {
	// GracePeriod is how old a Node's heartbeat may be before the node is
	// declared dead; 0: DefaultGracePeriod.
	GracePeriod time.Duration
	// Logger receives the controller's log; nil is silent.
	Logger *slog.Logger
}

// Add adds the node controller to mgr.
func Add(mgr manager.Manager, opts Options) error {
	if opts.GracePeriod <= 0 {
		opts.GracePeriod = DefaultGracePeriod
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &reconciler{client: mgr.GetClient(), events: mgr.GetEventRecorderFor(EventSource), grace: opts.GracePeriod, log: opts.Logger, now: time.Now}
	// A VMI's node is looked at when the VMI changes (one bound to a node
	// already dead fails at once).
	byNode := handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, vmi *v1.VirtualMachineInstance) []reconcile.Request {
		if n := vmi.Labels[v1.NodeNameLabel]; n != "" {
			return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: n}}}
		}
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("node").
		For(&k8sv1.Node{}).
		WatchesRawSource(source.Kind(mgr.GetCache(), &v1.VirtualMachineInstance{}, byNode)).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: 1,
			RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](200*time.Millisecond, 30*time.Second),
			SkipNameValidation:      ptr.To(true),
		}).
		Complete(r)
}

// reconciler is the node controller.
type reconciler struct {
	client client.Client
	events record.EventRecorder
	grace  time.Duration
	log    *slog.Logger
	now    func() time.Time
}

// Reconcile judges one Node and acts on a dead one.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var node k8sv1.Node
	if err := r.client.Get(ctx, req.NamespacedName, &node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	dead, after, err := unresponsive(&node, r.grace, r.now())
	if err != nil {
		r.log.Warn("controlplane: a Node's heartbeat cannot be read; not judging it", "node", node.Name, "err", err)
		return reconcile.Result{}, nil
	}
	if !dead {
		return reconcile.Result{RequeueAfter: after}, nil
	}
	if node.Labels[v1.NodeSchedulable] != "false" {
		orig := node.DeepCopy()
		if node.Labels == nil {
			node.Labels = map[string]string{}
		}
		node.Labels[v1.NodeSchedulable] = "false"
		if err := r.client.Patch(ctx, &node, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return reconcile.Result{RequeueAfter: time.Second}, nil // a heartbeat just came: judge again
			}
			return reconcile.Result{}, err
		}
		r.log.Info("controlplane: a node's agent is unresponsive: the node is unschedulable", "node", node.Name, "heartbeat", node.Annotations[v1.VirtHandlerHeartbeat])
		r.events.Event(&node, k8sv1.EventTypeNormal, NodeUnresponsiveReason, "virt-handler is not responsive, marking node as unresponsive")
	}
	var vmis v1.VirtualMachineInstanceList
	if err := r.client.List(ctx, &vmis, client.MatchingLabels{v1.NodeNameLabel: node.Name}); err != nil {
		return reconcile.Result{}, err
	}
	var errs []error
	for i := range vmis.Items {
		if err := r.fail(ctx, &vmis.Items[i]); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return reconcile.Result{}, fmt.Errorf("controlplane: failing the VMIs of node %s: %v", node.Name, errs)
	}
	return reconcile.Result{RequeueAfter: recheck}, nil
}

// fail makes a VMI of a dead node Failed (reason NodeUnresponsive) and
// takes the node agent's finalizer off it, unless it ended and holds no
// such finalizer already.
func (r *reconciler) fail(ctx context.Context, cached *v1.VirtualMachineInstance) error {
	vmi := orphaned(cached)
	if vmi == nil {
		return nil
	}
	err := r.client.Patch(ctx, vmi, client.MergeFromWithOptions(cached, client.MergeFromWithOptimisticLock{}))
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !domain.IsFinal(cached.Status.Phase) {
		r.log.Info("controlplane: a VMI on an unresponsive node fails", "vmi", client.ObjectKeyFromObject(vmi).String(), "node", vmi.Labels[v1.NodeNameLabel])
		r.events.Event(vmi, k8sv1.EventTypeNormal, NodeUnresponsiveReason,
			fmt.Sprintf("virt-handler on node %s is not responsive, marking VMI as failed", vmi.Labels[v1.NodeNameLabel]))
	}
	return nil
}

// orphaned returns a copy of the VMI of a dead node as it must become:
// Failed with reason NodeUnresponsive when it has not ended, without the
// node agent's finalizer; nil when it is that already.
func orphaned(vmi *v1.VirtualMachineInstance) *v1.VirtualMachineInstance {
	final := domain.IsFinal(vmi.Status.Phase)
	if final && !slices.Contains(vmi.Finalizers, nodeapi.Finalizer) {
		return nil
	}
	out := vmi.DeepCopy()
	if !final {
		out.Status.Phase = v1.Failed
		out.Status.Reason = NodeUnresponsiveReason
	}
	out.Finalizers = slices.DeleteFunc(out.Finalizers, func(f string) bool { return f == nodeapi.Finalizer })
	return out
}

// unresponsive tells whether node's heartbeat is older than grace at now;
// when it is not, after is when it will be (a Node without heartbeat is
// never unresponsive: after is 0).
func unresponsive(node *k8sv1.Node, grace time.Duration, now time.Time) (dead bool, after time.Duration, err error) {
	beat, ok, err := nodeapi.ParseHeartbeat(node)
	if err != nil || !ok {
		return false, 0, err
	}
	deadline := beat.Add(grace)
	if now.After(deadline) {
		return true, 0, nil
	}
	// A second past the deadline: the annotation is to the second.
	return false, deadline.Sub(now) + time.Second, nil
}
