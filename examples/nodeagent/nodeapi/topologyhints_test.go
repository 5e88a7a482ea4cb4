package nodeapi

import (
	"testing"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/hostcaps"
)

// tscNode is a Node with TSC frequency label freq ("" for none),
// schedulable or not.
func tscNode(name, freq string, schedulable bool) k8sv1.Node {
	l := map[string]string{v1.NodeSchedulable: "false"}
	if schedulable {
		l[v1.NodeSchedulable] = "true"
	}
	if freq != "" {
		l[hostcaps.TSCFrequencyLabel] = freq
	}
	return k8sv1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
}

// The lowest TSC frequency is that of the schedulable nodes and of those
// running VMIs, each with a frequency that is a number above 0.
func TestLowestTSCFrequency(t *testing.T) {
	nodes := []k8sv1.Node{
		tscNode("none", "", true),
		tscNode("bad", "fast", true),
		tscNode("zero", "0", true),
		tscNode("fast", "3000000000", true),
		tscNode("slow-down", "1000000000", false),    // unschedulable, runs nothing
		tscNode("slow-running", "2000000000", false), // unschedulable, runs VMIs
		tscNode("mid", "2500000000", true),
	}
	running := func(n string) bool { return n == "slow-running" }
	if got := LowestTSCFrequency(nodes, running); got != 2_000_000_000 {
		t.Errorf("LowestTSCFrequency = %d, want 2000000000 (slow-running's)", got)
	}
	if got := LowestTSCFrequency(nodes[:3], running); got != 0 {
		t.Errorf("LowestTSCFrequency of nodes without a frequency = %d, want 0", got)
	}
	h := TopologyHints(nodes[:3], running)
	if h == nil || h.TSCFrequency == nil || *h.TSCFrequency != 0 {
		t.Errorf("TopologyHints of nodes without a frequency = %+v, want a frequency of 0, as KubeVirt writes", h)
	}
}

// Only an amd64 VMI that needs a fixed TSC frequency and has no hints
// waits for them.
func TestNeedsTopologyHints(t *testing.T) {
	vmi := func(arch string, feature, policy string, reenlightenment *bool, hints *v1.TopologyHints) *v1.VirtualMachineInstance {
		v := &v1.VirtualMachineInstance{}
		v.Spec.Architecture = arch
		if feature != "" {
			v.Spec.Domain.CPU = &v1.CPU{Features: []v1.CPUFeature{{Name: feature, Policy: policy}}}
		}
		if reenlightenment != nil {
			v.Spec.Domain.Features = &v1.Features{Hyperv: &v1.FeatureHyperv{Reenlightenment: &v1.FeatureState{Enabled: reenlightenment}}}
		}
		v.Status.TopologyHints = hints
		return v
	}
	for _, c := range []struct {
		name string
		vmi  *v1.VirtualMachineInstance
		want bool
	}{
		{"invtsc required", vmi("amd64", "invtsc", "require", nil, nil), true},
		{"invtsc forced", vmi("amd64", "invtsc", "force", nil, nil), true},
		{"invtsc optional", vmi("amd64", "invtsc", "optional", nil, nil), false},
		{"invtsc, no policy", vmi("amd64", "invtsc", "", nil, nil), false},
		{"another feature", vmi("amd64", "vmx", "require", nil, nil), false},
		{"re-enlightenment", vmi("amd64", "", "", ptr.To(true), nil), true},
		{"re-enlightenment off", vmi("amd64", "", "", ptr.To(false), nil), false},
		{"arm64", vmi("arm64", "invtsc", "require", nil, nil), false},
		{"hints given", vmi("amd64", "invtsc", "require", nil, &v1.TopologyHints{TSCFrequency: ptr.To(int64(0))}), false},
	} {
		if got := NeedsTopologyHints(c.vmi); got != c.want {
			t.Errorf("%s: NeedsTopologyHints = %v, want %v", c.name, got, c.want)
		}
	}
}
