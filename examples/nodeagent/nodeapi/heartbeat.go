package nodeapi

import (
	"fmt"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	v1 "kubevirt.io/api/core/v1"
)

// NodeUnresponsiveReason is the reason of a VMI that the control plane
// failed because its node's heartbeat went stale (KubeVirt's): the agent
// that comes back destroys its domain.
const NodeUnresponsiveReason = "NodeUnresponsive"

// FormatHeartbeat is the value of a Node's kubevirt.io/heartbeat
// annotation at t, as virt-handler writes it: RFC 3339, to the second, in
// UTC (metav1.Time's JSON).
func FormatHeartbeat(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// ParseHeartbeat reads a Node's kubevirt.io/heartbeat annotation, written
// by its node agent's heartbeat; ok is false when the Node has none.
func ParseHeartbeat(node *k8sv1.Node) (t time.Time, ok bool, err error) {
	s, ok := node.Annotations[v1.VirtHandlerHeartbeat]
	if !ok {
		return time.Time{}, false, nil
	}
	t, err = time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, true, fmt.Errorf("nodeapi: Node %s: annotation %s %q is not an RFC 3339 time", node.Name, v1.VirtHandlerHeartbeat, s)
	}
	return t, true, nil
}
