package nodeapi

import (
	"strconv"

	k8sv1 "k8s.io/api/core/v1"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/hostcaps"
)

// NeedsTopologyHints tells whether vmi waits for status.topologyHints
// before it may be scheduled, as KubeVirt's virt-controller delays a
// launcher pod until its topology hinter has set them: an amd64 guest
// that needs a fixed TSC frequency (an invtsc CPU feature of policy
// require or force, or Hyper-V re-enlightenment), whose hints are not set.
func NeedsTopologyHints(vmi *v1.VirtualMachineInstance) bool {
	return vmi.Status.TopologyHints == nil && vmi.Spec.Architecture == "amd64" && needsTSCFrequency(vmi)
}

// TopologyHints are the status.topologyHints KubeVirt's topology hinter
// gives a VMI that NeedsTopologyHints: the lowest TSC frequency of nodes
// (LowestTSCFrequency), 0 when no node has one — KubeVirt writes that 0
// too, and then neither requires a frequency of the node nor fixes the
// guest's (RequirementsOf, and the converter's tsc timer, ignore it).
// running tells whether a node runs VMIs (status.nodeName).
func TopologyHints(nodes []k8sv1.Node, running func(node string) bool) *v1.TopologyHints {
	freq := LowestTSCFrequency(nodes, running)
	return &v1.TopologyHints{TSCFrequency: &freq}
}

// LowestTSCFrequency is the lowest TSC frequency (Hz) among nodes that
// are schedulable (kubevirt.io/schedulable=true) or run VMIs (running),
// read from their cpu-timer.node.kubevirt.io/tsc-frequency label; a node
// whose label is missing, not a number or not above 0 is left out; 0 when
// none is left. (KubeVirt's KubeVirt CR may fix it instead:
// spec.configuration.minimumClusterTSCFrequency, which this project does
// not read.)
func LowestTSCFrequency(nodes []k8sv1.Node, running func(node string) bool) int64 {
	var lowest int64
	for i := range nodes {
		n := &nodes[i]
		freq, err := strconv.ParseInt(n.Labels[hostcaps.TSCFrequencyLabel], 10, 64)
		if err != nil || freq <= 0 || (n.Labels[v1.NodeSchedulable] != "true" && !running(n.Name)) {
			continue
		}
		if lowest == 0 || freq < lowest {
			lowest = freq
		}
	}
	return lowest
}
