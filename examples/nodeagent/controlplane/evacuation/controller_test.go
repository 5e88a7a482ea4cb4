package evacuation

import (
	"context"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/scheme"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// vmiOn is a Running VMI on node with the eviction strategy s (nil: none
// set).
func vmiOn(name, node string, s *v1.EvictionStrategy) *v1.VirtualMachineInstance {
	return &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{v1.NodeNameLabel: node}},
		Spec:       v1.VirtualMachineInstanceSpec{EvictionStrategy: s},
		Status:     v1.VirtualMachineInstanceStatus{Phase: v1.Running, NodeName: node},
	}
}

func strategy(s v1.EvictionStrategy) *v1.EvictionStrategy { return &s }

// failed is a failed evacuation migration of vmi created at created,
// failed at end.
func failed(name, vmi string, created, end time.Time) *v1.VirtualMachineInstanceMigration {
	return &v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(created),
			Annotations: map[string]string{v1.EvacuationMigrationAnnotation: "a"},
		},
		Spec: v1.VirtualMachineInstanceMigrationSpec{VMIName: vmi},
		Status: v1.VirtualMachineInstanceMigrationStatus{Phase: v1.MigrationFailed, PhaseTransitionTimestamps: []v1.VirtualMachineInstanceMigrationPhaseTransitionTimestamp{
			{Phase: v1.MigrationFailed, PhaseTransitionTimestamp: metav1.NewTime(end)},
		}},
	}
}

// world is a fake API server holding objs, and the controller on it, with
// the cluster's default eviction strategy LiveMigrate.
func world(t *testing.T, objs ...client.Object) (*reconciler, client.Client) {
	t.Helper()
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).WithObjectTracker(plainTracker(s)).Build()
	r := &reconciler{
		client: c, fresh: c, events: record.NewFakeRecorder(100), log: slog.New(slog.DiscardHandler),
		cluster: api.ClusterConfig{EvictionStrategy: v1.EvictionStrategyLiveMigrate}, now: func() time.Time { return t0 },
	}
	return r, c
}

// plainTracker is an object tracker without the fake client's default
// field management, whose reflection of typed objects panics on the VMI
// status' uint64 runtimeUser.
func plainTracker(s *runtime.Scheme) clienttesting.ObjectTracker {
	return clienttesting.NewObjectTracker(s, serializer.NewCodecFactory(s).UniversalDecoder())
}

// evacuations lists the VMIs that have an evacuation migration from node,
// sorted, checking each migration's form.
func evacuations(t *testing.T, c client.Client, node string) []string {
	t.Helper()
	var list v1.VirtualMachineInstanceMigrationList
	if err := c.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range list.Items {
		if m.Status.Phase != "" {
			continue // made by the test
		}
		if m.Annotations[v1.EvacuationMigrationAnnotation] != node || !strings.HasPrefix(m.Name, "kubevirt-evacuation-") ||
			m.Spec.Priority == nil || *m.Spec.Priority != v1.PrioritySystemCritical {
			t.Errorf("migration %s: annotations %v, priority %v; want KubeVirt's evacuation migration from %s", m.Name, m.Annotations, m.Spec.Priority, node)
		}
		got = append(got, m.Spec.VMIName)
	}
	sort.Strings(got)
	return got
}

// TestDrained: on a node with the drain taint, the VMIs whose eviction
// strategy is LiveMigrate or LiveMigrateIfPossible (their own, or the
// cluster's) get one migration each and evacuationNodeName; the others,
// those of other nodes, those migrating, ended or known unmigratable are
// left alone; a second pass creates nothing more.
func TestDrained(t *testing.T) {
	drained := &k8sv1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: k8sv1.NodeSpec{
		Unschedulable: true, Taints: []k8sv1.Taint{{Key: NodeDrainTaintKey, Value: "draining", Effect: k8sv1.TaintEffectNoSchedule}},
	}}
	migrating := vmiOn("migrating", "a", strategy(v1.EvictionStrategyLiveMigrate))
	migrating.Status.MigrationState = &v1.VirtualMachineInstanceMigrationState{SourceNode: "a", TargetNode: "b"}
	ended := vmiOn("ended", "a", strategy(v1.EvictionStrategyLiveMigrate))
	ended.Status.Phase = v1.Succeeded
	unmigratable := vmiOn("unmigratable", "a", strategy(v1.EvictionStrategyLiveMigrate))
	unmigratable.Status.Conditions = []v1.VirtualMachineInstanceCondition{{Type: v1.VirtualMachineInstanceIsMigratable, Status: k8sv1.ConditionFalse}}
	withMigration := vmiOn("with-migration", "a", strategy(v1.EvictionStrategyLiveMigrate))
	pendingMigration := &v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "by-hand"},
		Spec:       v1.VirtualMachineInstanceMigrationSpec{VMIName: "with-migration"},
		Status:     v1.VirtualMachineInstanceMigrationStatus{Phase: v1.MigrationPending},
	}
	r, c := world(t, drained,
		vmiOn("live", "a", strategy(v1.EvictionStrategyLiveMigrate)),
		vmiOn("if-possible", "a", strategy(v1.EvictionStrategyLiveMigrateIfPossible)),
		vmiOn("cluster-default", "a", nil),
		vmiOn("none", "a", strategy(v1.EvictionStrategyNone)),
		vmiOn("external", "a", strategy(v1.EvictionStrategyExternal)),
		vmiOn("elsewhere", "b", strategy(v1.EvictionStrategyLiveMigrate)),
		migrating, ended, unmigratable, withMigration, pendingMigration,
	)
	ctx := context.Background()
	for range 2 {
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKey{Name: "a"}}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"cluster-default", "if-possible", "live"}
	if got := evacuations(t, c, "a"); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("evacuation migrations of %q, want %q", got, want)
	}
	var vmis v1.VirtualMachineInstanceList
	if err := c.List(ctx, &vmis); err != nil {
		t.Fatal(err)
	}
	for _, vmi := range vmis.Items {
		wantMark := ""
		if strings.Contains(strings.Join(want, " "), vmi.Name) {
			wantMark = "a"
		}
		if vmi.Status.EvacuationNodeName != wantMark {
			t.Errorf("VMI %s: evacuationNodeName %q, want %q", vmi.Name, vmi.Status.EvacuationNodeName, wantMark)
		}
	}
}

// TestNotDrained: a node without the drain taint (cordoned only, or with
// another taint) migrates only the VMIs marked for evacuation from it.
func TestNotDrained(t *testing.T) {
	cordoned := &k8sv1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: k8sv1.NodeSpec{
		Unschedulable: true, Taints: []k8sv1.Taint{{Key: NodeDrainTaintKey, Effect: k8sv1.TaintEffectPreferNoSchedule}, {Key: "other", Effect: k8sv1.TaintEffectNoSchedule}},
	}}
	marked := vmiOn("marked", "a", strategy(v1.EvictionStrategyLiveMigrate))
	marked.Status.EvacuationNodeName = "a"
	r, c := world(t, cordoned, marked, vmiOn("unmarked", "a", strategy(v1.EvictionStrategyLiveMigrate)))
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: "a"}}); err != nil {
		t.Fatal(err)
	}
	if got := evacuations(t, c, "a"); strings.Join(got, " ") != "marked" {
		t.Errorf("evacuation migrations of %q, want only the marked VMI's", got)
	}
}

// listCounter is a reader that counts its LISTs.
type listCounter struct {
	client.Reader
	lists int
}

func (c *listCounter) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.lists++
	return c.Reader.List(ctx, list, opts...)
}

// TestNoLeaveNoList: reconciling a node whose VMIs all stay (not drained,
// none marked) reads no migration from the API server; a drained one
// reads them once, however many VMIs leave.
func TestNoLeaveNoList(t *testing.T) {
	drained := &k8sv1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: k8sv1.NodeSpec{
		Taints: []k8sv1.Taint{{Key: NodeDrainTaintKey, Effect: k8sv1.TaintEffectNoSchedule}},
	}}
	r, c := world(t, &k8sv1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, drained,
		vmiOn("stays", "a", nil), vmiOn("leaves-1", "b", nil), vmiOn("leaves-2", "b", nil))
	fresh := &listCounter{Reader: c}
	r.fresh = fresh
	for _, node := range []string{"a", "b"} {
		fresh.lists = 0
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: node}}); err != nil {
			t.Fatal(err)
		}
		if want := map[string]int{"a": 0, "b": 1}[node]; fresh.lists != want {
			t.Errorf("node %s: %d LISTs of migrations from the API server, want %d", node, fresh.lists, want)
		}
	}
	if got := evacuations(t, c, "b"); strings.Join(got, " ") != "leaves-1 leaves-2" {
		t.Errorf("evacuation migrations of %q, want both of node b's VMIs", got)
	}
}

// TestBackoff: a VMI whose evacuation migrations failed is tried again 20 s
// after the first failure, 40 s after the second; failures before its last
// success do not count.
func TestBackoff(t *testing.T) {
	drained := &k8sv1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: k8sv1.NodeSpec{
		Taints: []k8sv1.Taint{{Key: NodeDrainTaintKey, Effect: k8sv1.TaintEffectNoSchedule}},
	}}
	succeeded := &v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ok", CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
		Spec:       v1.VirtualMachineInstanceMigrationSpec{VMIName: "twice"},
		Status:     v1.VirtualMachineInstanceMigrationStatus{Phase: v1.MigrationSucceeded},
	}
	r, c := world(t, drained,
		vmiOn("once", "a", nil), failed("once-1", "once", t0.Add(-time.Minute), t0.Add(-15*time.Second)),
		vmiOn("twice", "a", nil), failed("twice-0", "twice", t0.Add(-2*time.Hour), t0.Add(-2*time.Hour)), succeeded,
		failed("twice-1", "twice", t0.Add(-time.Minute), t0.Add(-50*time.Second)), failed("twice-2", "twice", t0.Add(-30*time.Second), t0.Add(-10*time.Second)),
		vmiOn("long-ago", "a", nil), failed("long-ago-1", "long-ago", t0.Add(-time.Hour), t0.Add(-time.Hour)),
	)
	res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := evacuations(t, c, "a"); strings.Join(got, " ") != "long-ago" {
		t.Errorf("evacuation migrations of %q, want only long-ago's (the others in their backoff)", got)
	}
	// once: 20 s after its failure 15 s ago; twice: 40 s after 10 s ago.
	if res.RequeueAfter != 5*time.Second {
		t.Errorf("requeue after %s, want 5s (once's backoff ends first)", res.RequeueAfter)
	}
	r.now = func() time.Time { return t0.Add(6 * time.Second) }
	res, err = r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := evacuations(t, c, "a"); strings.Join(got, " ") != "long-ago once" {
		t.Errorf("evacuation migrations of %q, want long-ago's and once's", got)
	}
	if res.RequeueAfter != 24*time.Second {
		t.Errorf("requeue after %s, want 24s (twice's backoff of 40 s)", res.RequeueAfter)
	}
}
