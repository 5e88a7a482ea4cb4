package agent

import (
	"context"
	"maps"
	"os"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/hostcaps"
)

// HostLabels is the agent's NodeLabeller unless Config.Labeller says
// otherwise: KubeVirt's node labeller's labels of the host's facts
// (hostcaps.NodeLabels: cpu-model.node.kubevirt.io/<model>,
// cpu-feature.node.kubevirt.io/<feature>,
// host-model-cpu.node.kubevirt.io/<model>,
// machine-type.node.kubevirt.io/<type>...) and of its kernel's realtime
// setting (hostcaps.RealtimeLabels: kubevirt.io/realtime), with Static's
// added (a Static label wins). Facts is asked, and the kernel's setting
// read, at every check of the heartbeat; the launcher's
// Launcher.HostFacts reads the facts once per connection, so the labels
// follow a reconnect to a changed libvirt.
type HostLabels struct {
	// Facts gives the host's facts (the launcher's HostFacts).
	Facts func(context.Context) (convert.HostFacts, error)
	// Static are labels of the node's own (Config.NodeLabels).
	Static labels.Set
	// SchedRTRuntime is the file of the kernel's realtime runtime limit;
	// empty: hostcaps.SchedRTRuntimePath. A file that cannot be read gives
	// no realtime label.
	SchedRTRuntime string
}

// NodeLabels returns the labels of the facts, the kernel and Static.
func (h HostLabels) NodeLabels(ctx context.Context) (map[string]string, error) {
	f, err := h.Facts(ctx)
	if err != nil {
		return nil, err
	}
	l := hostcaps.NodeLabels(f)
	path := h.SchedRTRuntime
	if path == "" {
		path = hostcaps.SchedRTRuntimePath
	}
	rt, _ := os.ReadFile(path) // unreadable: not realtime, as KubeVirt's labeller
	maps.Copy(l, hostcaps.RealtimeLabels(rt))
	maps.Copy(l, h.Static)
	return l, nil
}
