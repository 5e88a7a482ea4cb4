package nodeapi

import (
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

// Fits tells whether vmi may run on node: its spec.nodeSelector, the added
// selector (a migration's addedNodeSelector; nil for none) and its
// required node affinity match node's labels and name, as
// kube-scheduler's NodeAffinity filter decides, and node meets what
// KubeVirt's virt-controller requires of it for vmi (RequirementsOf: CPU
// model and features, machine type, SEV, TSC frequency...). (The agents'
// nodes have no taints, so tolerations do not matter; resources and pod
// (anti-)affinity are not considered.) A node affinity that cannot be
// parsed is an error naming its field.
func (s Scheduling) Fits(vmi *v1.VirtualMachineInstance, node *k8sv1.Node, added map[string]string) (bool, error) {
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
