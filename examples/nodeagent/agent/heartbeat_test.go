package agent

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
)

// The heartbeat creates the Node with its labels and the time, marks it
// unschedulable while libvirt does not answer and schedulable again when
// it does, and unschedulable when it stops.
func TestHeartbeat(t *testing.T) {
	cs := fake.NewClientset()
	var down atomic.Bool
	h := &heartbeat{
		node: "node-a", nodes: cs, labeller: StaticLabels{"zone": "a"}, interval: time.Hour, check: 10 * time.Millisecond,
		log: slog.New(slog.DiscardHandler),
		probe: func(context.Context) error {
			if down.Load() {
				return errors.New("libvirt: no connection")
			}
			return nil
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Start(ctx) }()
	waitNode := func(what string, ok func(*k8sv1.Node) bool) *k8sv1.Node {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			n, err := cs.CoreV1().Nodes().Get(context.Background(), "node-a", metav1.GetOptions{})
			if err == nil && ok(n) {
				return n
			}
			if time.Now().After(deadline) {
				t.Fatalf("Node not %s: %v %+v", what, err, n)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	schedulable := func(want string) func(*k8sv1.Node) bool {
		return func(n *k8sv1.Node) bool { return n.Labels[v1.NodeSchedulable] == want }
	}
	n := waitNode("schedulable", schedulable("true"))
	if n.Labels["zone"] != "a" || n.Labels[k8sv1.LabelHostname] != "node-a" {
		t.Errorf("labels %v, want zone=a and the hostname", n.Labels)
	}
	at, ok, err := nodeapi.ParseHeartbeat(n)
	if !ok || err != nil || time.Since(at) > time.Minute {
		t.Errorf("heartbeat %q: %v %v", n.Annotations[v1.VirtHandlerHeartbeat], ok, err)
	}
	down.Store(true)
	waitNode("unschedulable while libvirt is down", schedulable("false"))
	down.Store(false)
	waitNode("schedulable again", schedulable("true"))
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitNode("unschedulable once stopped", schedulable("false"))
}
