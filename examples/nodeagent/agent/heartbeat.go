package agent

import (
	"context"
	"log/slog"
	"maps"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
)

// DefaultHeartbeatInterval is virt-handler's: the Node's heartbeat is
// written at least this often.
const DefaultHeartbeatInterval = time.Minute

// heartbeatFieldManager owns the labels and the annotation the heartbeat
// applies to the Node (apart from the node API's address, which the
// agent's fieldManager owns: each apply replaces what its manager owns).
const heartbeatFieldManager = "vmi2libvirt-nodeagent-heartbeat"

// NodeLabeller gives the labels that describe what this node can run, as
// KubeVirt's node labeller does (cpu-model.node.kubevirt.io/<model>,
// machine-type.node.kubevirt.io/<type>...): the heartbeat puts them on the
// Node beside kubevirt.io/schedulable, and -claim matches VMIs against the
// Node's labels. It is asked at every beat; an error keeps the labels of
// the last answer.
type NodeLabeller interface {
	NodeLabels(ctx context.Context) (map[string]string, error)
}

// StaticLabels is a NodeLabeller of fixed labels (the -node-labels flag).
type StaticLabels labels.Set

// NodeLabels returns the labels.
func (s StaticLabels) NodeLabels(context.Context) (map[string]string, error) { return s, nil }

// heartbeat keeps the Node's kubevirt.io/heartbeat annotation and its
// labels current, as virt-handler's heartbeat does: at start, whenever
// what it would write changes (libvirt reachable or not, the labeller's
// labels), and at least every interval; kubevirt.io/schedulable is "true"
// only while libvirt answers, and "false" once the agent stops. The Node
// is created when missing (a kubelet registers it on a real node; the test
// cluster has none).
type heartbeat struct {
	node     string
	nodes    kubernetes.Interface
	labeller NodeLabeller
	probe    func(context.Context) error // nil: libvirt answers
	interval time.Duration               // the longest time between two beats
	check    time.Duration               // how often probe and labeller are asked
	log      *slog.Logger
}

// observeTimeout bounds each question of a heartbeat's check.
const observeTimeout = 5 * time.Second

// beat is what one heartbeat writes besides the time.
type beat struct {
	schedulable bool
	labels      map[string]string
}

func (b beat) equal(o beat) bool {
	return b.schedulable == o.schedulable && maps.Equal(b.labels, o.labels)
}

// Start beats until ctx ends, then marks the Node unschedulable.
func (h *heartbeat) Start(ctx context.Context) error {
	var last beat
	var written time.Time
	for {
		now := h.observe(ctx, last)
		if ctx.Err() != nil {
			break
		}
		if written.IsZero() || !now.equal(last) || time.Since(written) >= h.interval {
			if err := h.write(ctx, now); err != nil {
				h.log.Warn("nodeagent: cannot write the heartbeat to the Node; retrying", "err", err)
			} else {
				if written.IsZero() || !now.equal(last) {
					h.log.Info("nodeagent: heartbeat written to the Node", "schedulable", now.schedulable, "labels", labels.Set(now.labels).String())
				}
				last, written = now, time.Now()
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(h.check):
		}
	}
	stop, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	last.schedulable = false
	if err := h.write(stop, last); err != nil {
		h.log.Warn("nodeagent: cannot mark the Node unschedulable", "err", err)
	} else {
		h.log.Info("nodeagent: Node marked unschedulable", "label", v1.NodeSchedulable)
	}
	return nil
}

// NeedLeaderElection is false: every agent beats for its own node.
func (h *heartbeat) NeedLeaderElection() bool { return false }

// observe asks libvirt and the labeller (each for at most observeTimeout;
// the labeller only while libvirt answers, as its labels are libvirt's
// facts); labels of last stay when libvirt or the labeller fails.
func (h *heartbeat) observe(ctx context.Context, last beat) beat {
	b := beat{schedulable: true, labels: last.labels}
	if h.probe != nil {
		pctx, cancel := context.WithTimeout(ctx, observeTimeout)
		err := h.probe(pctx)
		cancel()
		if err != nil && ctx.Err() == nil {
			b.schedulable = false
			if last.schedulable {
				h.log.Warn("nodeagent: libvirt does not answer: the Node becomes unschedulable", "err", err)
			}
		}
	}
	if !b.schedulable {
		return b
	}
	lctx, cancel := context.WithTimeout(ctx, observeTimeout)
	l, err := h.labeller.NodeLabels(lctx)
	cancel()
	if err != nil {
		h.log.Warn("nodeagent: the node's labels cannot be read; keeping the last ones", "err", err)
		return b
	}
	b.labels = maps.Clone(l)
	return b
}

// write applies the beat and the time to the Node.
func (h *heartbeat) write(ctx context.Context, b beat) error {
	node := corev1ac.Node(h.node).
		WithLabels(nodeLabels(h.node, b)).
		WithAnnotations(map[string]string{v1.VirtHandlerHeartbeat: nodeapi.FormatHeartbeat(time.Now())})
	_, err := h.nodes.CoreV1().Nodes().Apply(ctx, node, metav1.ApplyOptions{FieldManager: heartbeatFieldManager, Force: true})
	return err
}

// nodeLabels are the labels a beat puts on the Node: the labeller's,
// kubernetes.io/hostname (the node's name, as a kubelet sets it) and
// kubevirt.io/schedulable.
func nodeLabels(node string, b beat) map[string]string {
	l := map[string]string{k8sv1.LabelHostname: node}
	maps.Copy(l, b.labels)
	l[v1.NodeSchedulable] = "false"
	if b.schedulable {
		l[v1.NodeSchedulable] = "true"
	}
	return l
}
