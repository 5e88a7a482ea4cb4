// Package evacuation is KubeVirt's evacuation controller (virt-controller's
// pkg/virt-controller/watch/drain/evacuation): it migrates the VMIs of a
// drained node away.
//
// A Node with KubeVirt's drain taint (kubevirt.io/drain, effect
// NoSchedule: `kubectl taint node N kubevirt.io/drain=draining:NoSchedule`,
// usually beside `kubectl cordon N`) is drained: every VMI on it (its
// status.nodeName) whose evictionStrategy is LiveMigrate or
// LiveMigrateIfPossible (its own, or the cluster's for a VMI that sets
// none) gets a VirtualMachineInstanceMigration (generateName
// kubevirt-evacuation-, the kubevirt.io/evacuationMigration annotation
// naming the node, priority system-critical), and its
// status.evacuationNodeName names the node; the migration controller then
// moves it to a node that is neither cordoned nor tainted. A VMI already
// marked for evacuation from its node (evacuationNodeName, as KubeVirt's
// eviction webhook sets it) is migrated the same way on an untainted node.
// Left alone: a VMI with another strategy (None, External), one that
// ended or is being deleted, one whose LiveMigratable condition is False,
// one with a migration not ended or a migrationState under way. A VMI whose
// evacuation migrations failed is tried again after KubeVirt's backoff:
// 20 s after the first failure, doubled for each further one since its
// last success. The source node's agent clears evacuationNodeName once the
// VMI runs elsewhere.
package evacuation

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	v1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

// NodeDrainTaintKey is KubeVirt's default migrations.nodeDrainTaintKey:
// a node with this NoSchedule taint is drained.
const NodeDrainTaintKey = "kubevirt.io/drain"

// EventSource is the component of the controller's Events.
const EventSource = "evacuation-controller"

// The reasons of the controller's Events on a VMI, KubeVirt's.
const (
	SuccessfulCreateReason = "SuccessfulCreate"
	FailedCreateReason     = "FailedCreate"
)

// firstBackoff is how long after a failed evacuation migration the VMI is
// tried again; each further failure doubles it (KubeVirt's migration
// backoff).
const firstBackoff = 20 * time.Second

// Options configure the evacuation controller.
type Options struct {
	// Cluster gives the evictionStrategy of VMIs that set none.
	Cluster api.ClusterConfig
	// Logger receives the controller's log; nil is silent.
	Logger *slog.Logger
}

// Add adds the evacuation controller to mgr.
func Add(mgr manager.Manager, opts Options) error {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &reconciler{
		client: mgr.GetClient(), fresh: mgr.GetAPIReader(), events: mgr.GetEventRecorderFor(EventSource),
		cluster: opts.Cluster, log: opts.Logger, now: time.Now,
	}
	// A VMI's change, and one of its migrations, look at its node again.
	ofVMI := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return nodeRequest(o.(*v1.VirtualMachineInstance).Status.NodeName)
	})
	ofMigration := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, o client.Object) []reconcile.Request {
		var vmi v1.VirtualMachineInstance
		key := client.ObjectKey{Namespace: o.GetNamespace(), Name: o.(*v1.VirtualMachineInstanceMigration).Spec.VMIName}
		if err := mgr.GetClient().Get(ctx, key, &vmi); err != nil {
			return nil
		}
		return nodeRequest(vmi.Status.NodeName)
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("evacuation").
		For(&k8sv1.Node{}).
		Watches(&v1.VirtualMachineInstance{}, ofVMI).
		Watches(&v1.VirtualMachineInstanceMigration{}, ofMigration).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1, SkipNameValidation: ptr.To(true)}).
		Complete(r)
}

// nodeRequest is the request of the node named node; none for "".
func nodeRequest(node string) []reconcile.Request {
	if node == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: node}}}
}

// reconciler is the evacuation controller.
type reconciler struct {
	client  client.Client
	fresh   client.Reader // migrations, read afresh: one just created is seen
	events  record.EventRecorder
	cluster api.ClusterConfig
	log     *slog.Logger
	now     func() time.Time
}

// Reconcile creates the migrations that take a node's VMIs away.
func (r *reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var node k8sv1.Node
	if err := r.client.Get(ctx, req.NamespacedName, &node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	drained := Drained(&node)
	var vmis v1.VirtualMachineInstanceList
	if err := r.client.List(ctx, &vmis, client.MatchingLabels{v1.NodeNameLabel: node.Name}); err != nil {
		return reconcile.Result{}, err
	}
	// The migrations are read from the API server only when a VMI is to
	// leave: a node that keeps its VMIs costs no LIST.
	var migrations *v1.VirtualMachineInstanceMigrationList
	var res reconcile.Result
	for i := range vmis.Items {
		vmi := &vmis.Items[i]
		if vmi.Status.NodeName != node.Name || !(drained || vmi.Status.EvacuationNodeName == node.Name) || !r.evictable(vmi) {
			continue
		}
		if migrations == nil {
			migrations = &v1.VirtualMachineInstanceMigrationList{}
			if err := r.fresh.List(ctx, migrations); err != nil {
				return reconcile.Result{}, err
			}
		}
		wait, busy := r.pending(vmi, migrations.Items)
		switch {
		case busy:
			continue
		case wait > 0:
			if res.RequeueAfter == 0 || wait < res.RequeueAfter {
				res.RequeueAfter = wait
			}
			continue
		}
		if err := r.evacuate(ctx, vmi, node.Name); err != nil {
			return reconcile.Result{}, err
		}
	}
	return res, nil
}

// Drained tells whether node carries KubeVirt's drain taint.
func Drained(node *k8sv1.Node) bool {
	drain := k8sv1.Taint{Key: NodeDrainTaintKey, Effect: k8sv1.TaintEffectNoSchedule}
	for i := range node.Spec.Taints {
		if node.Spec.Taints[i].MatchTaint(&drain) {
			return true
		}
	}
	return false
}

// migrateOnEviction are the eviction strategies that move a VMI away.
var migrateOnEviction = map[v1.EvictionStrategy]bool{
	v1.EvictionStrategyLiveMigrate:           true,
	v1.EvictionStrategyLiveMigrateIfPossible: true,
}

// evictable tells whether vmi is alive, asks to be migrated on eviction,
// and is not known to be unmigratable.
func (r *reconciler) evictable(vmi *v1.VirtualMachineInstance) bool {
	if vmi.DeletionTimestamp != nil || domain.IsFinal(vmi.Status.Phase) || !migrateOnEviction[r.cluster.EvictionStrategyOf(vmi)] {
		return false
	}
	for _, c := range vmi.Status.Conditions {
		if c.Type == v1.VirtualMachineInstanceIsMigratable && c.Status == k8sv1.ConditionFalse {
			return false
		}
	}
	return true
}

// pending tells whether vmi is migrating (a migration of it has not
// ended, or its migrationState is under way: busy) or in the backoff of
// its failed evacuation migrations (wait: how long still).
func (r *reconciler) pending(vmi *v1.VirtualMachineInstance, migrations []v1.VirtualMachineInstanceMigration) (wait time.Duration, busy bool) {
	if ms := vmi.Status.MigrationState; ms != nil && !ms.Completed {
		return 0, true
	}
	var lastSuccess, lastFailure time.Time
	failures := 0
	for i := range migrations {
		m := &migrations[i]
		if m.Namespace != vmi.Namespace || m.Spec.VMIName != vmi.Name {
			continue
		}
		switch m.Status.Phase {
		case v1.MigrationSucceeded:
			lastSuccess = later(lastSuccess, m.CreationTimestamp.Time)
		case v1.MigrationFailed:
		default:
			return 0, true
		}
	}
	for i := range migrations {
		m := &migrations[i]
		if m.Namespace != vmi.Namespace || m.Spec.VMIName != vmi.Name || m.Status.Phase != v1.MigrationFailed ||
			m.Annotations[v1.EvacuationMigrationAnnotation] == "" || m.CreationTimestamp.Time.Before(lastSuccess) {
			continue
		}
		failures++
		lastFailure = later(lastFailure, endOf(m))
	}
	if failures == 0 {
		return 0, false
	}
	backoff := firstBackoff << (failures - 1)
	return max(0, lastFailure.Add(backoff).Sub(r.now())), false
}

// endOf is when migration m failed: its Failed phase's timestamp, or its
// creation.
func endOf(m *v1.VirtualMachineInstanceMigration) time.Time {
	for _, p := range m.Status.PhaseTransitionTimestamps {
		if p.Phase == v1.MigrationFailed {
			return p.PhaseTransitionTimestamp.Time
		}
	}
	return m.CreationTimestamp.Time
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// evacuate marks vmi for evacuation from node and creates its migration.
func (r *reconciler) evacuate(ctx context.Context, vmi *v1.VirtualMachineInstance, node string) error {
	if vmi.Status.EvacuationNodeName != node {
		orig := vmi.DeepCopy()
		vmi.Status.EvacuationNodeName = node
		if err := r.client.Patch(ctx, vmi, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				// Its change brings the node back.
				return nil
			}
			return err
		}
	}
	mig := &v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: vmi.Namespace, GenerateName: "kubevirt-evacuation-",
			Annotations: map[string]string{v1.EvacuationMigrationAnnotation: node},
		},
		Spec: v1.VirtualMachineInstanceMigrationSpec{VMIName: vmi.Name, Priority: ptr.To(v1.PrioritySystemCritical)},
	}
	if err := r.client.Create(ctx, mig); err != nil {
		r.events.Eventf(vmi, k8sv1.EventTypeWarning, FailedCreateReason, "Error creating a Migration: %v", err)
		return fmt.Errorf("evacuating %s/%s from %s: %w", vmi.Namespace, vmi.Name, node, err)
	}
	r.events.Eventf(vmi, k8sv1.EventTypeNormal, SuccessfulCreateReason, "Created Migration %s", mig.Name)
	r.log.Info("evacuation: migrating a VMI off its drained node", "vmi", vmi.Namespace+"/"+vmi.Name, "node", node, "migration", mig.Name)
	return nil
}
