package agent

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
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
