package migration

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/scheme"
)

func node(name string, schedulable string, labels map[string]string) *k8sv1.Node {
	l := map[string]string{v1.NodeSchedulable: schedulable}
	for k, v := range labels {
		l[k] = v
	}
	return &k8sv1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
}

// TestReconcile walks a migration through its phases as the source
// agent's writes to the VMI's migrationState move it: the target is the
// schedulable node other than the source, not cordoned nor tainted, that
// the VMI's nodeSelector fits; each phase entered has its timestamp;
// deleting the migration under way asks the abort and keeps the finalizer
// until it ended.
func TestReconcile(t *testing.T) {
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	pool := map[string]string{"example.com/pool": "p"}
	vmi := &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vmi", UID: "vmi-uid", Labels: map[string]string{v1.NodeNameLabel: "a"}},
		Spec:       v1.VirtualMachineInstanceSpec{NodeSelector: pool},
		Status:     v1.VirtualMachineInstanceStatus{Phase: v1.Running, NodeName: "a"},
	}
	mig := &v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", UID: "mig-uid"},
		Spec:       v1.VirtualMachineInstanceMigrationSpec{VMIName: "vmi"},
	}
	cordoned, drained := node("c1", "true", pool), node("c2", "true", pool)
	cordoned.Spec.Unschedulable = true
	drained.Spec.Taints = []k8sv1.Taint{{Key: "kubevirt.io/drain", Value: "draining", Effect: k8sv1.TaintEffectNoSchedule}}
	c := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1.VirtualMachineInstanceMigration{}).
		WithObjects(vmi, mig,
			node("a", "true", pool), node("b", "false", pool), // the source; unschedulable
			node("c", "true", nil), cordoned, drained, // not in the pool; cordoned; tainted
			node("d", "true", pool), // the target
		).Build()
	r := &reconciler{client: c, fresh: c, log: slog.New(slog.DiscardHandler)}
	ctx := context.Background()
	step := func(want v1.VirtualMachineInstanceMigrationPhase, phases string) {
		t.Helper()
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(mig)}); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(mig), mig); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range mig.Status.PhaseTransitionTimestamps {
			got = append(got, string(p.Phase))
		}
		if mig.Status.Phase != want || strings.Join(got, " ") != phases {
			t.Errorf("phase %s after %q, want %s after %q", mig.Status.Phase, got, want, phases)
		}
	}
	writeState := func(f func(*v1.VirtualMachineInstanceMigrationState)) {
		t.Helper()
		if err := c.Get(ctx, client.ObjectKeyFromObject(vmi), vmi); err != nil {
			t.Fatal(err)
		}
		f(vmi.Status.MigrationState)
		if err := c.Update(ctx, vmi); err != nil {
			t.Fatal(err)
		}
	}

	step(v1.MigrationPreparingTarget, "Pending Scheduling Scheduled PreparingTarget")
	if err := c.Get(ctx, client.ObjectKeyFromObject(vmi), vmi); err != nil {
		t.Fatal(err)
	}
	if ms := vmi.Status.MigrationState; ms == nil || ms.MigrationUID != mig.UID || ms.SourceNode != "a" || ms.TargetNode != "d" {
		t.Fatalf("VMI migrationState %+v, want mig-uid from a to d", ms)
	}
	if len(mig.Finalizers) != 1 || mig.Finalizers[0] != v1.VirtualMachineInstanceMigrationFinalizer {
		t.Errorf("finalizers %v, want KubeVirt's", mig.Finalizers)
	}
	now := metav1.NewTime(time.Now())
	writeState(func(ms *v1.VirtualMachineInstanceMigrationState) {
		ms.TargetNodeAddress, ms.StartTimestamp = "qemu:///d", &now
	})
	step(v1.MigrationRunning, "Pending Scheduling Scheduled PreparingTarget TargetReady Running")

	// Deleted while it runs: the abort is asked, the finalizer stays.
	if err := c.Delete(ctx, mig); err != nil {
		t.Fatal(err)
	}
	step(v1.MigrationRunning, "Pending Scheduling Scheduled PreparingTarget TargetReady Running")
	if err := c.Get(ctx, client.ObjectKeyFromObject(vmi), vmi); err != nil {
		t.Fatal(err)
	}
	if !vmi.Status.MigrationState.AbortRequested || len(mig.Status.Conditions) != 1 || mig.Status.Conditions[0].Type != v1.VirtualMachineInstanceMigrationAbortRequested {
		t.Errorf("abortRequested %v, conditions %+v: want the abort asked", vmi.Status.MigrationState.AbortRequested, mig.Status.Conditions)
	}
	// The agent ends it: the finalizer goes, and the object with it.
	writeState(func(ms *v1.VirtualMachineInstanceMigrationState) { ms.Completed, ms.Failed = true, true })
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(mig)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(mig), mig); err == nil {
		t.Errorf("the aborted migration is still there, finalizers %v", mig.Finalizers)
	}
}

// TestReconcileSucceeded: a completed migrationState is Succeeded; a
// migration whose VMI is not there fails.
func TestReconcileSucceeded(t *testing.T) {
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(time.Now())
	vmi := &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vmi", UID: "vmi-uid"},
		Status: v1.VirtualMachineInstanceStatus{Phase: v1.Running, NodeName: "d", MigrationState: &v1.VirtualMachineInstanceMigrationState{
			MigrationUID: "mig-uid", SourceNode: "a", TargetNode: "d", TargetNodeAddress: "qemu:///d", StartTimestamp: &now, Completed: true,
		}},
	}
	mig := &v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", UID: "mig-uid"},
		Spec:       v1.VirtualMachineInstanceMigrationSpec{VMIName: "vmi"},
		Status:     v1.VirtualMachineInstanceMigrationStatus{Phase: v1.MigrationRunning},
	}
	lost := &v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "lost", UID: "lost-uid"},
		Spec:       v1.VirtualMachineInstanceMigrationSpec{VMIName: "nothere"},
	}
	c := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1.VirtualMachineInstanceMigration{}).WithObjects(vmi, mig, lost).Build()
	r := &reconciler{client: c, fresh: c, log: slog.New(slog.DiscardHandler)}
	for _, m := range []*v1.VirtualMachineInstanceMigration{mig, lost} {
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(m)}); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(m), m); err != nil {
			t.Fatal(err)
		}
	}
	if mig.Status.Phase != v1.MigrationSucceeded || mig.Status.MigrationState == nil || !mig.Status.MigrationState.Completed {
		t.Errorf("migration %s, state %+v, want Succeeded with the VMI's state", mig.Status.Phase, mig.Status.MigrationState)
	}
	if lost.Status.Phase != v1.MigrationFailed {
		t.Errorf("migration of a missing VMI: %s, want Failed", lost.Status.Phase)
	}
}

// TestReconcileStaleCache: a migration past Scheduled whose VMI's cached
// copy does not show its migrationState yet (the write of schedule not
// seen) is not failed: the API server's copy is ours, and the migration
// follows it.
func TestReconcileStaleCache(t *testing.T) {
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	vmi := &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vmi", UID: "vmi-uid"},
		Status:     v1.VirtualMachineInstanceStatus{Phase: v1.Running, NodeName: "a"},
	}
	mig := &v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m", UID: "mig-uid", Finalizers: []string{v1.VirtualMachineInstanceMigrationFinalizer}},
		Spec:       v1.VirtualMachineInstanceMigrationSpec{VMIName: "vmi"},
		Status:     v1.VirtualMachineInstanceMigrationStatus{Phase: v1.MigrationPreparingTarget},
	}
	cache := fake.NewClientBuilder().WithScheme(s).WithStatusSubresource(&v1.VirtualMachineInstanceMigration{}).WithObjects(vmi.DeepCopy(), mig).Build()
	api := vmi.DeepCopy()
	api.Status.MigrationState = &v1.VirtualMachineInstanceMigrationState{MigrationUID: "mig-uid", SourceNode: "a", TargetNode: "b"}
	fresh := fake.NewClientBuilder().WithScheme(s).WithObjects(api).Build()
	r := &reconciler{client: cache, fresh: fresh, log: slog.New(slog.DiscardHandler)}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(mig)}); err != nil {
		t.Fatal(err)
	}
	if err := cache.Get(context.Background(), client.ObjectKeyFromObject(mig), mig); err != nil {
		t.Fatal(err)
	}
	if mig.Status.Phase != v1.MigrationPreparingTarget {
		t.Errorf("migration %s with a stale cached VMI, want PreparingTarget (the API server's migrationState is ours)", mig.Status.Phase)
	}
	// Another migration's state on the API server too: it fails.
	api.Status.MigrationState.MigrationUID = "other"
	if err := fresh.Update(context.Background(), api); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(mig)}); err != nil {
		t.Fatal(err)
	}
	if err := cache.Get(context.Background(), client.ObjectKeyFromObject(mig), mig); err != nil {
		t.Fatal(err)
	}
	if mig.Status.Phase != v1.MigrationFailed {
		t.Errorf("migration %s whose VMI migrates for another, want Failed", mig.Status.Phase)
	}
}
