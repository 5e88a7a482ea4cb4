package node

import (
	"slices"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
)

func TestUnresponsive(t *testing.T) {
	now := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	withBeat := func(at string) *k8sv1.Node {
		return &k8sv1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{v1.VirtHandlerHeartbeat: at}}}
	}
	for _, c := range []struct {
		name  string
		node  *k8sv1.Node
		dead  bool
		after time.Duration
		err   bool
	}{
		{"no heartbeat", &k8sv1.Node{}, false, 0, false},
		{"fresh", withBeat("2026-12-02T12:59:00Z"), false, 4*time.Minute + time.Second, false},
		{"at the grace period", withBeat("2026-12-02T12:55:00Z"), false, time.Second, false},
		{"stale", withBeat("2026-12-02T12:54:59Z"), true, 0, false},
		{"unreadable", withBeat("soon"), false, 0, true},
	} {
		dead, after, err := unresponsive(c.node, DefaultGracePeriod, now)
		if dead != c.dead || after != c.after || (err != nil) != c.err {
			t.Errorf("%s: dead %t after %s err %v, want %t %s error %t", c.name, dead, after, err, c.dead, c.after, c.err)
		}
	}
}

func TestOrphaned(t *testing.T) {
	vmi := func(phase v1.VirtualMachineInstancePhase, finalizers ...string) *v1.VirtualMachineInstance {
		return &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "v", Finalizers: finalizers}, Status: v1.VirtualMachineInstanceStatus{Phase: phase}}
	}
	running := vmi(v1.Running, v1.VirtualMachineInstanceFinalizer, nodeapi.Finalizer)
	got := orphaned(running)
	if got.Status.Phase != v1.Failed || got.Status.Reason != NodeUnresponsiveReason || !slices.Equal(got.Finalizers, []string{v1.VirtualMachineInstanceFinalizer}) {
		t.Errorf("running VMI became %s %q %v, want Failed NodeUnresponsive without the agent's finalizer", got.Status.Phase, got.Status.Reason, got.Finalizers)
	}
	if running.Status.Phase != v1.Running {
		t.Error("orphaned changed its argument")
	}
	succeeded := orphaned(vmi(v1.Succeeded, nodeapi.Finalizer))
	if succeeded.Status.Phase != v1.Succeeded || succeeded.Status.Reason != "" || len(succeeded.Finalizers) != 0 {
		t.Errorf("an ended VMI became %s %q %v, want its phase kept, the finalizer gone", succeeded.Status.Phase, succeeded.Status.Reason, succeeded.Finalizers)
	}
	if got := orphaned(vmi(v1.Failed)); got != nil {
		t.Errorf("an ended VMI without the agent's finalizer: %+v, want nothing to do", got)
	}
}
