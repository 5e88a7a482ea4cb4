package nodeapi

import (
	"slices"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	v1 "kubevirt.io/api/core/v1"
)

// Fits tells whether vmi may run on node with KubeVirt's default
// scheduling (Scheduling{}.Fits).
func Fits(vmi *v1.VirtualMachineInstance, node *k8sv1.Node, added map[string]string) (bool, error) {
	return Scheduling{}.Fits(vmi, node, added)
}

// Fits tells whether vmi may be placed on node, as kube-scheduler's
// NodeUnschedulable, TaintToleration and NodeAffinity filters decide, and
// whether node meets what KubeVirt's virt-controller requires of it for
// vmi (RequirementsOf: CPU model and features, machine type, SEV, TSC
// frequency...): the node is not cordoned (spec.unschedulable) unless vmi
// tolerates node.kubernetes.io/unschedulable, vmi's spec.tolerations
// tolerate every NoSchedule and NoExecute taint of the node (a drained
// node's kubevirt.io/drain among them), and its spec.nodeSelector, the
// added selector (a migration's addedNodeSelector; nil for none) and its
// required node affinity match node's labels and name. (Resources and pod
// (anti-)affinity are not considered.) A node affinity that cannot be
// parsed is an error naming its field.
func (s Scheduling) Fits(vmi *v1.VirtualMachineInstance, node *k8sv1.Node, added map[string]string) (bool, error) {
	if !tolerated(vmi.Spec.Tolerations, node) {
		return false, nil
	}
	set := labels.Set(node.Labels)
	if !labels.SelectorFromSet(vmi.Spec.NodeSelector).Matches(set) || !labels.SelectorFromSet(added).Matches(set) ||
		!s.RequirementsOf(vmi).Met(node) {
		return false, nil
	}
	a := vmi.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return true, nil
	}
	path := field.NewPath("spec", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
	required, err := nodeaffinity.NewNodeSelector(a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution, field.WithPath(path))
	if err != nil {
		return false, err
	}
	return required.Match(node), nil
}

// kubeletTaints are the taints of a node whose kubelet is not ready, which
// the API server's TaintNodesByCondition puts on every new Node and no
// node lifecycle controller takes off here: the agent's heartbeat
// (kubevirt.io/schedulable) says whether a node is ready.
var kubeletTaints = map[string]bool{k8sv1.TaintNodeNotReady: true, k8sv1.TaintNodeUnreachable: true}

// tolerated tells whether tolerations let a new pod onto node: its
// scheduling taints, and its cordon as the taint the node lifecycle
// controller puts for it.
func tolerated(tolerations []k8sv1.Toleration, node *k8sv1.Node) bool {
	taints := node.Spec.Taints
	if node.Spec.Unschedulable {
		taints = append(slices.Clip(taints), k8sv1.Taint{Key: k8sv1.TaintNodeUnschedulable, Effect: k8sv1.TaintEffectNoSchedule})
	}
	for i := range taints {
		taint := &taints[i]
		if taint.Effect == k8sv1.TaintEffectPreferNoSchedule || kubeletTaints[taint.Key] {
			continue
		}
		if !slices.ContainsFunc(tolerations, func(t k8sv1.Toleration) bool { return t.ToleratesTaint(taint) }) {
			return false
		}
	}
	return true
}
