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

// labellerFunc is a NodeLabeller of a function.
type labellerFunc func(context.Context) (map[string]string, error)

func (f labellerFunc) NodeLabels(ctx context.Context) (map[string]string, error) { return f(ctx) }

// The heartbeat creates the Node with its labels and the time, marks it
// unschedulable while libvirt does not answer and schedulable again when
// it does, and unschedulable when it stops. A labeller that waits for
// libvirt (as the launcher's facts wait for a reconnect) neither holds the
// heartbeat up nor takes the labels away.
func TestHeartbeat(t *testing.T) {
	cs := fake.NewClientset()
	var down atomic.Bool
	labeller := labellerFunc(func(ctx context.Context) (map[string]string, error) {
		if down.Load() {
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return map[string]string{"zone": "a"}, nil
	})
	h := &heartbeat{
		node: "node-a", nodes: cs, labeller: labeller, interval: time.Hour, check: 10 * time.Millisecond,
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
	if n := waitNode("unschedulable while libvirt is down", schedulable("false")); n.Labels["zone"] != "a" {
		t.Errorf("labels %v while libvirt is down, want zone=a kept", n.Labels)
	}
	down.Store(false)
	waitNode("schedulable again", schedulable("true"))
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitNode("unschedulable once stopped", schedulable("false"))
}
