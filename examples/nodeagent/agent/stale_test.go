package agent

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
)

func TestStaleReason(t *testing.T) {
	dom := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm1", UID: "old"}}
	vmi := func(uid, node string, phase v1.VirtualMachineInstancePhase, reason string) *v1.VirtualMachineInstance {
		return &v1.VirtualMachineInstance{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm1", UID: "old", Labels: map[string]string{v1.NodeNameLabel: node}},
			Status:     v1.VirtualMachineInstanceStatus{Phase: phase, Reason: reason},
		}
	}
	replaced := vmi("", "node-b", v1.Running, "")
	replaced.UID = "new"
	// A migration from node-b to here under way (the target's agent was
	// restarted mid-job: its incoming domain must live on), and one ended.
	incoming := vmi("old", "node-b", v1.Running, "")
	incoming.Status.MigrationState = &v1.VirtualMachineInstanceMigrationState{SourceNode: "node-b", TargetNode: "node-a"}
	failedHere := incoming.DeepCopy()
	failedHere.Status.MigrationState.Completed, failedHere.Status.MigrationState.Failed = true, true
	for _, c := range []struct {
		name string
		vmi  *v1.VirtualMachineInstance
		want string
	}{
		{"its own VMI, running", vmi("old", "node-a", v1.Running, ""), ""},
		{"its own VMI, failed otherwise", vmi("old", "node-a", v1.Failed, ""), ""},
		{"replaced", replaced, "replaced by VMI new"},
		{"bound elsewhere", vmi("old", "node-b", v1.Running, ""), "bound to node node-b"},
		{"migrating here", incoming, ""},
		{"migrated here and failed", failedHere, "bound to node node-b"},
		{"node declared dead", vmi("old", "node-a", v1.Failed, nodeapi.NodeUnresponsiveReason), "its node was declared dead (NodeUnresponsive)"},
	} {
		if got := staleReason(dom, c.vmi, "node-a"); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
