package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	v1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
)

// migrationFieldManager owns the Node annotations of addMigrations.
const migrationFieldManager = "nodeagent-migration"

// migrations is the agent's side of live migration, virt-handler's
// migration source: a VMI of this node whose status.migrationState names
// this node as source and another as target (the control plane's
// migration controller writes it for a VirtualMachineInstanceMigration)
// is migrated by this node's launcher (launcher.Migrate) to a launcher of
// the target's libvirt host, made from the annotations the target's agent
// put on its Node (nodeapi.LibvirtURIAnnotation, StateDirAnnotation; its
// owner is the Node's name). The target prepares its side from this
// process: both nodes' state folders are on one file system, as on the
// test machine. The migration's start, end and outcome are written to
// migrationState; once it succeeded, status.nodeName and the
// kubevirt.io/nodeName label name the target, whose agent then runs the
// VMI, found running there. An AbortRequested migrationState aborts the
// migration under way (Migrate's context ends).
//
// While a VMI migrates, and after it left, the node's other controllers
// leave it alone (away): its domain goes without the VMI having ended.
// A VMI left is remembered until the node's view no longer lists it (its
// label names the target by then), so the record holds only the VMIs
// whose move the view has not caught up with.
//
// An agent SIGKILLed mid-migration does not stop it: libvirtd drives the
// peer-to-peer job by itself. What a restarted agent decides, by its side
// (as KubeVirt's virt-handler, where the launcher outlives the handler):
//
//   - source: a VMI whose migrationState names this node as source and
//     has begun (startTimestamp) but not ended is its predecessor's; until
//     it is settled the VMI is away (no Sync could start the guest a
//     second time, nor a vanished domain fail it). launcher.SettleMigration
//     waits for libvirt's job (an abortRequested aborts it) and decides
//     from both libvirt hosts; the outcome is written as Migrate's would
//     be: completed (nodeName and label name the target) or failed (the
//     guest runs here);
//   - target: nothing of the migration runs in its process (the source
//     drives it, and prepares the target from its own); its launcher
//     judges the incoming domain at start (hostplan.JudgeMigration), the
//     domain is no orphan while the migrationState targets this node
//     (incoming), and the VMI is this node's once the source wrote so.
type migrations struct {
	client   client.Client
	reader   client.Reader // Nodes, and VMIs read afresh
	launcher *launcher.Launcher
	cfg      launcher.Config // this node's: the target launcher's defaults
	node     string
	// bandwidth caps each migration's stream, bytes per second; 0: none.
	bandwidth uint64
	log       *slog.Logger

	mu      sync.Mutex
	running map[types.UID]context.CancelFunc   // under way from here: what aborts it
	left    map[types.UID]types.NamespacedName // migrated to another node, still in the node's view
}

// away tells whether vmi is migrating from this node (here, or begun by
// an agent before this one and not settled yet) or has left it; false for
// nil migrations.
func (m *migrations) away(vmi *v1.VirtualMachineInstance) bool {
	if m == nil {
		return false
	}
	if ms := vmi.Status.MigrationState; ms != nil && ms.SourceNode == m.node && ms.TargetNode != m.node &&
		ms.StartTimestamp != nil && !ms.Completed {
		return true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	_, left := m.left[vmi.UID]
	return m.running[vmi.UID] != nil || left
}

// forgetLeft drops the record of the VMIs called name that left: the
// node's view no longer lists it.
func (m *migrations) forgetLeft(name types.NamespacedName) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for uid, n := range m.left {
		if n == name {
			delete(m.left, uid)
		}
	}
}

// leftCount is how many VMIs that left are still recorded.
func (m *migrations) leftCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.left)
}

// incoming tells whether the VMI name, not (yet) in the node's cache, is
// this node's after all: migrating here (its migrationState's target, not
// completed), or just bound here. Its domain is then no orphan; nor while
// the VMI cannot be read (the API server down right after a migration
// here completed, before the source wrote it: the guest is this node's
// then). False for nil migrations, and for a VMI that is gone.
func (m *migrations) incoming(ctx context.Context, name types.NamespacedName) bool {
	if m == nil {
		return false
	}
	var vmi v1.VirtualMachineInstance
	if err := m.reader.Get(ctx, name, &vmi); err != nil {
		return !apierrors.IsNotFound(err)
	}
	ms := vmi.Status.MigrationState
	return vmi.Labels[v1.NodeNameLabel] == m.node || (ms != nil && ms.TargetNode == m.node && !ms.Completed)
}

// addMigrations adds the migration source controller and the runnable
// that writes the node's libvirt URI and state folder on its Node.
func addMigrations(mgr manager.Manager, nodes kubernetes.Interface, m *migrations) error {
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		return annotateNode(ctx, nodes, m.node, m.cfg, m.log)
	})); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("vmi-migration").
		For(&v1.VirtualMachineInstance{}).
		WithOptions(controllerOptions(1)).
		Complete(m)
}

// annotateNode applies the node's migration annotations to its Node,
// retried until it succeeds or ctx ends.
func annotateNode(ctx context.Context, nodes kubernetes.Interface, node string, cfg launcher.Config, log *slog.Logger) error {
	uri := cfg.URI
	if uri == "" {
		uri = launcher.DefaultURI
	}
	apply := corev1ac.Node(node).WithAnnotations(map[string]string{
		nodeapi.LibvirtURIAnnotation: uri,
		nodeapi.StateDirAnnotation:   cfg.Layout.StateDir,
	})
	for {
		_, err := nodes.CoreV1().Nodes().Apply(ctx, apply, metav1.ApplyOptions{FieldManager: migrationFieldManager, Force: true})
		if err == nil {
			return nil
		}
		log.Warn("nodeagent: cannot write the migration annotations on the Node", "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(5 * time.Second):
		}
	}
}

// Reconcile starts the migration a VMI's migrationState asks of this node,
// settles one an earlier agent began, or aborts the one under way when
// asked to. A VMI the node's view no longer lists is forgotten.
func (m *migrations) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var vmi v1.VirtualMachineInstance
	if err := m.client.Get(ctx, req.NamespacedName, &vmi); err != nil {
		if apierrors.IsNotFound(err) {
			m.forgetLeft(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	ms := vmi.Status.MigrationState
	if ms != nil && ms.TargetNode == m.node {
		// Migrated (back) here: this node's again.
		m.mu.Lock()
		delete(m.left, vmi.UID)
		m.mu.Unlock()
	}
	if ms == nil || ms.SourceNode != m.node || ms.TargetNode == "" || ms.TargetNode == m.node || ms.Completed {
		return reconcile.Result{}, nil
	}
	m.mu.Lock()
	abort := m.running[vmi.UID]
	m.mu.Unlock()
	switch {
	case abort != nil && vmi.DeletionTimestamp != nil:
		// A VMI deleted while it migrates stays here to shut down, as
		// KubeVirt aborts the migration of a VMI being deleted.
		m.log.Info("nodeagent: aborting the migration of a deleted VMI", "vmi", key(&vmi), "migration", ms.MigrationUID)
		abort()
		return reconcile.Result{}, nil
	case vmi.DeletionTimestamp != nil && ms.StartTimestamp == nil:
		return reconcile.Result{}, nil // never begun: the VMI is this node's to shut down
	case abort != nil && ms.AbortRequested:
		// Migrate aborts when its context ends, in the target's
		// preparation as in libvirt's job (AbortMigration only in the job).
		m.log.Info("nodeagent: aborting the migration", "vmi", key(&vmi), "migration", ms.MigrationUID)
		abort()
		return reconcile.Result{}, nil
	case abort != nil:
		return reconcile.Result{}, nil // under way here
	case ms.StartTimestamp != nil:
		// Begun by an agent of this node that is gone: libvirt's job may
		// run on, or have ended while nobody watched.
		target, err := m.targetOf(ctx, ms.TargetNode)
		if err != nil {
			return reconcile.Result{}, err // the Node is still needed: retried
		}
		m.log.Info("nodeagent: settling a migration an earlier agent began", "vmi", key(&vmi), "to", ms.TargetNode, "migration", ms.MigrationUID)
		abort := m.start(ctx, &vmi, target, m.settle)
		if ms.AbortRequested || vmi.DeletionTimestamp != nil {
			// Asked while no agent ran, or the VMI deleted: the job, if it
			// runs on, is aborted. (A deleted VMI whose migration nobody
			// settled stayed away from both nodes, Terminating for ever.)
			abort()
		}
		return reconcile.Result{}, nil
	case ms.AbortRequested:
		return reconcile.Result{}, m.finish(ctx, &vmi, nil, errors.New("aborted before it began"))
	}
	target, err := m.targetOf(ctx, ms.TargetNode)
	if err != nil {
		return reconcile.Result{}, m.finish(ctx, &vmi, nil, err)
	}
	orig := vmi.DeepCopy()
	now := metav1.Now()
	vmi.Status.MigrationState.TargetNodeAddress = target.URI
	vmi.Status.MigrationState.StartTimestamp = &now
	vmi.Status.MigrationState.Mode = v1.MigrationPreCopy
	if err := m.client.Patch(ctx, &vmi, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return ignoreStale(err)
	}
	m.log.Info("nodeagent: migrating", "vmi", key(&vmi), "to", ms.TargetNode, "uri", target.URI, "migration", ms.MigrationUID)
	m.start(ctx, &vmi, target, m.run)
	return reconcile.Result{}, nil
}

// runner carries a migration out to its end: launcher.Migrate, or
// launcher.SettleMigration.
type runner func(ctx context.Context, vmi *v1.VirtualMachineInstance, target launcher.Config) (*v1.VirtualMachineInstanceMigrationState, error)

// start runs the migration of vmi to target with run, in the background,
// abortable (running) until it ended and its outcome is written; it
// returns what aborts it.
func (m *migrations) start(ctx context.Context, vmi *v1.VirtualMachineInstance, target launcher.Config, run runner) context.CancelFunc {
	mctx, cancel := context.WithCancel(ctx)
	m.mu.Lock()
	m.running[vmi.UID] = cancel
	m.mu.Unlock()
	vmi = vmi.DeepCopy()
	go func() {
		defer cancel()
		m.migrate(ctx, mctx, vmi, target, run)
	}()
	return cancel
}

// targetOf is the launcher configuration of node's libvirt host, from its
// Node's annotations.
func (m *migrations) targetOf(ctx context.Context, node string) (launcher.Config, error) {
	var n k8sv1.Node
	if err := m.reader.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
		return launcher.Config{}, fmt.Errorf("the target Node %s: %w", node, err)
	}
	uri, dir := n.Annotations[nodeapi.LibvirtURIAnnotation], n.Annotations[nodeapi.StateDirAnnotation]
	if uri == "" || dir == "" {
		return launcher.Config{}, fmt.Errorf("the target Node %s has no %s and %s annotations (its agent writes them)", node, nodeapi.LibvirtURIAnnotation, nodeapi.StateDirAnnotation)
	}
	cfg := m.cfg
	cfg.URI, cfg.Owner, cfg.Layout.StateDir = uri, node, dir
	return cfg, nil
}

// migrate runs the migration of vmi to the launcher of target with run
// until mctx ends (an abort) and writes its outcome.
func (m *migrations) migrate(ctx, mctx context.Context, vmi *v1.VirtualMachineInstance, target launcher.Config, run runner) {
	uid := vmi.UID
	state, err := run(mctx, vmi, target)
	m.mu.Lock()
	delete(m.running, uid)
	if err == nil {
		m.left[uid] = client.ObjectKeyFromObject(vmi)
	}
	m.mu.Unlock()
	if err != nil {
		m.log.Warn("nodeagent: migration failed", "vmi", key(vmi), "to", target.Owner, "err", err)
	} else {
		m.log.Info("nodeagent: migrated", "vmi", key(vmi), "to", target.Owner)
	}
	// The outcome decides which node's the VMI is: written until it is,
	// or until the agent stops (its successor settles the migration).
	for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
		werr := m.finish(ctx, vmi, state, err)
		if werr == nil {
			return
		}
		m.log.Error("nodeagent: cannot write a migration's outcome; retrying", "vmi", key(vmi), "err", werr, "in", wait)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// run is launcher.Migrate to a launcher of target.
func (m *migrations) run(ctx context.Context, vmi *v1.VirtualMachineInstance, target launcher.Config) (*v1.VirtualMachineInstanceMigrationState, error) {
	t, err := launcher.New(ctx, target)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	uid := types.UID(vmi.Status.MigrationState.MigrationUID)
	return m.launcher.Migrate(ctx, vmi, t, launcher.MigrateOptions{UID: uid, Bandwidth: m.bandwidth})
}

// settle is launcher.SettleMigration of the migration an earlier agent
// began to a launcher of target; ctx ending aborts libvirt's job, not the
// settling.
func (m *migrations) settle(ctx context.Context, vmi *v1.VirtualMachineInstance, target launcher.Config) (*v1.VirtualMachineInstanceMigrationState, error) {
	t, err := launcher.New(context.WithoutCancel(ctx), target)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	uid := types.UID(vmi.Status.MigrationState.MigrationUID)
	return m.launcher.SettleMigration(ctx, vmi, t, launcher.MigrateOptions{UID: uid})
}

// finish writes a migration's end to the VMI's migrationState (the
// launcher's state, when there is one, under the control plane's names):
// failed with cause, or completed, and then the VMI is the target's
// (status.nodeName, the kubevirt.io/nodeName label) and no longer marked
// for evacuation (status.evacuationNodeName).
func (m *migrations) finish(ctx context.Context, ref *v1.VirtualMachineInstance, state *v1.VirtualMachineInstanceMigrationState, cause error) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var vmi v1.VirtualMachineInstance
		if err := m.reader.Get(ctx, client.ObjectKeyFromObject(ref), &vmi); err != nil {
			return client.IgnoreNotFound(err)
		}
		cur := vmi.Status.MigrationState
		if vmi.UID != ref.UID || cur == nil || cur.MigrationUID != ref.Status.MigrationState.MigrationUID {
			return nil
		}
		orig := vmi.DeepCopy()
		out := cur.DeepCopy()
		if state != nil {
			out = state.DeepCopy()
			out.MigrationUID, out.SourceNode, out.TargetNode = cur.MigrationUID, cur.SourceNode, cur.TargetNode
			out.TargetNodeAddress, out.AbortRequested = cur.TargetNodeAddress, cur.AbortRequested
			if out.StartTimestamp == nil {
				out.StartTimestamp = cur.StartTimestamp
			}
		}
		now := metav1.Now()
		if out.EndTimestamp == nil {
			out.EndTimestamp = &now
		}
		out.Completed = true
		out.Failed = cause != nil
		if cause != nil {
			out.FailureReason = cause.Error()
			if cur.AbortRequested {
				out.AbortStatus = v1.MigrationAbortSucceeded
			}
		} else {
			vmi.Status.NodeName = cur.TargetNode
			// Evacuated, as KubeVirt's migration target says.
			vmi.Status.EvacuationNodeName = ""
			metav1.SetMetaDataLabel(&vmi.ObjectMeta, v1.NodeNameLabel, cur.TargetNode)
		}
		vmi.Status.MigrationState = out
		return m.client.Patch(ctx, &vmi, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))
	})
}
