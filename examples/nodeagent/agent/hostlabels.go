package agent

import (
	"context"
	"maps"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/hostcaps"
)

// HostLabels is the agent's NodeLabeller unless Config.Labeller says
// otherwise: KubeVirt's node labeller's labels of the host's facts
// (hostcaps.NodeLabels: cpu-model.node.kubevirt.io/<model>,
// cpu-feature.node.kubevirt.io/<feature>,
// host-model-cpu.node.kubevirt.io/<model>,
// machine-type.node.kubevirt.io/<type>...), with Static's added (a Static
// label wins). Facts is asked at every check of the heartbeat; the
// launcher's Launcher.HostFacts reads them once per connection, so the
// labels follow a reconnect to a changed libvirt.
type HostLabels struct {
	// Facts gives the host's facts (the launcher's HostFacts).
	Facts func(context.Context) (convert.HostFacts, error)
	// Static are labels of the node's own (Config.NodeLabels).
	Static labels.Set
}

// NodeLabels returns the labels of the facts and Static.
func (h HostLabels) NodeLabels(ctx context.Context) (map[string]string, error) {
	f, err := h.Facts(ctx)
	if err != nil {
		return nil, err
	}
	l := hostcaps.NodeLabels(f)
	maps.Copy(l, h.Static)
	return l, nil
}
