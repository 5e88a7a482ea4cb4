package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestMigrationsForgetLeft: the record of VMIs that migrated away holds
// only those the node's view still lists. 1000 VMIs left; the view drops
// all but one (its label names the target now): 999 reconciles of names
// it no longer lists leave one record, the VMI still listed, still away.
func TestMigrationsForgetLeft(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	still := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm-0", UID: "uid-0"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(still).Build()
	m := &migrations{client: c, reader: c, node: "a", log: slog.New(slog.DiscardHandler),
		running: map[types.UID]context.CancelFunc{}, left: map[types.UID]types.NamespacedName{}}
	for i := range 1000 {
		m.left[types.UID(fmt.Sprintf("uid-%d", i))] = types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("vm-%d", i)}
	}
	for i := range 1000 {
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: fmt.Sprintf("vm-%d", i)}}
		if _, err := m.Reconcile(context.Background(), req); err != nil {
			t.Fatalf("Reconcile %s: %v", req, err)
		}
	}
	if n := m.leftCount(); n != 1 {
		t.Errorf("%d VMIs recorded as left after the view dropped 999 of 1000, want 1", n)
	}
	if !m.away(still) {
		t.Error("the VMI still in the view is no longer away")
	}
}

// TestMigrationsAway: a VMI is away from its source node while its
// migrationState says a migration from there has begun and not ended,
// whichever agent began it; not before it began, once it ended, nor on the
// target.
func TestMigrationsAway(t *testing.T) {
	now := metav1.Now()
	m := &migrations{node: "a", running: map[types.UID]context.CancelFunc{}, left: map[types.UID]types.NamespacedName{}}
	for _, c := range []struct {
		name string
		ms   *v1.VirtualMachineInstanceMigrationState
		want bool
	}{
		{"no migration", nil, false},
		{"scheduled, not begun", &v1.VirtualMachineInstanceMigrationState{SourceNode: "a", TargetNode: "b"}, false},
		{"begun here", &v1.VirtualMachineInstanceMigrationState{SourceNode: "a", TargetNode: "b", StartTimestamp: &now}, true},
		{"ended", &v1.VirtualMachineInstanceMigrationState{SourceNode: "a", TargetNode: "b", StartTimestamp: &now, Completed: true}, false},
		{"coming here", &v1.VirtualMachineInstanceMigrationState{SourceNode: "b", TargetNode: "a", StartTimestamp: &now}, false},
	} {
		vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{UID: "u"}, Status: v1.VirtualMachineInstanceStatus{MigrationState: c.ms}}
		if got := m.away(vmi); got != c.want {
			t.Errorf("%s: away %v, want %v", c.name, got, c.want)
		}
	}
}

// TestMigrationsIncoming: a domain whose VMI is not in the node's cache is
// this node's while the VMI migrates here or is bound here — and while the
// VMI cannot be read (the API server down right after a migration here
// completed, before the source wrote the outcome: the soak saw the target
// shut the guest down then); not once the VMI is gone or another node's.
// A VMI being deleted while its migration runs here aborts it.
func TestMigrationsIncoming(t *testing.T) {
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	vmi := func(name, label string, ms *v1.VirtualMachineInstanceMigrationState) *v1.VirtualMachineInstance {
		return &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name),
			Labels: map[string]string{v1.NodeNameLabel: label}}, Status: v1.VirtualMachineInstanceStatus{MigrationState: ms}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		vmi("coming", "b", &v1.VirtualMachineInstanceMigrationState{SourceNode: "b", TargetNode: "a"}),
		vmi("arrived", "b", &v1.VirtualMachineInstanceMigrationState{SourceNode: "b", TargetNode: "a", Completed: true}),
		vmi("bound", "a", nil),
		vmi("other", "b", nil),
	).Build()
	down := interceptor.NewClient(c, interceptor.Funcs{Get: func(context.Context, client.WithWatch, client.ObjectKey, client.Object, ...client.GetOption) error {
		return errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
	}})
	for _, tc := range []struct {
		name   string
		reader client.Reader
		want   bool
	}{
		{"coming", c, true},
		{"bound", c, true},
		{"arrived", c, false}, // completed: its label is the truth
		{"other", c, false},
		{"gone", c, false},
		{"coming", down, true},
		{"gone", down, true},
	} {
		m := &migrations{reader: tc.reader, node: "a"}
		if got := m.incoming(context.Background(), types.NamespacedName{Namespace: "ns", Name: tc.name}); got != tc.want {
			t.Errorf("incoming(%s) with the API server %s = %t, want %t", tc.name, map[bool]string{true: "up", false: "down"}[tc.reader == client.Reader(c)], got, tc.want)
		}
	}

	// Deleted while migrating from here: aborted.
	deleting := vmi("leaving", "a", &v1.VirtualMachineInstanceMigrationState{SourceNode: "a", TargetNode: "b", MigrationUID: "m1", StartTimestamp: ptrTime(metav1.Now())})
	deleting.Finalizers = []string{Finalizer}
	c2 := fake.NewClientBuilder().WithScheme(scheme).WithObjects(deleting).Build()
	if err := c2.Delete(context.Background(), deleting); err != nil {
		t.Fatal(err)
	}
	aborted := false
	m := &migrations{client: c2, reader: c2, node: "a", log: slog.New(slog.DiscardHandler),
		running: map[types.UID]context.CancelFunc{"leaving": func() { aborted = true }}, left: map[types.UID]types.NamespacedName{}}
	if _, err := m.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "leaving"}}); err != nil {
		t.Fatal(err)
	}
	if !aborted {
		t.Error("the migration of a VMI being deleted was not aborted")
	}
}

func ptrTime(t metav1.Time) *metav1.Time { return &t }
