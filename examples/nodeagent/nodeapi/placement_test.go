package nodeapi

import (
	"testing"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"
)

// TestFitsTaints: a cordoned node and a node with a NoSchedule or
// NoExecute taint (a drained node's kubevirt.io/drain) take no VMI that
// does not tolerate it, as kube-scheduler's filters decide; a
// PreferNoSchedule taint does not keep it off.
func TestFitsTaints(t *testing.T) {
	drain := k8sv1.Taint{Key: "kubevirt.io/drain", Value: "draining", Effect: k8sv1.TaintEffectNoSchedule}
	tolerateDrain := k8sv1.Toleration{Key: "kubevirt.io/drain", Operator: k8sv1.TolerationOpExists}
	tolerateCordon := k8sv1.Toleration{Key: k8sv1.TaintNodeUnschedulable, Operator: k8sv1.TolerationOpExists, Effect: k8sv1.TaintEffectNoSchedule}
	cases := []struct {
		name        string
		spec        k8sv1.NodeSpec
		tolerations []k8sv1.Toleration
		want        bool
	}{
		{name: "no taint", want: true},
		{name: "cordoned", spec: k8sv1.NodeSpec{Unschedulable: true}},
		{name: "cordoned, tolerated", spec: k8sv1.NodeSpec{Unschedulable: true}, tolerations: []k8sv1.Toleration{tolerateCordon}, want: true},
		{name: "drain taint", spec: k8sv1.NodeSpec{Taints: []k8sv1.Taint{drain}}},
		{name: "drain taint, tolerated", spec: k8sv1.NodeSpec{Taints: []k8sv1.Taint{drain}}, tolerations: []k8sv1.Toleration{tolerateDrain}, want: true},
		{name: "drain taint tolerated, cordon not", spec: k8sv1.NodeSpec{Unschedulable: true, Taints: []k8sv1.Taint{drain}}, tolerations: []k8sv1.Toleration{tolerateDrain}},
		{name: "NoExecute", spec: k8sv1.NodeSpec{Taints: []k8sv1.Taint{{Key: "x", Effect: k8sv1.TaintEffectNoExecute}}}},
		{name: "not-ready (no kubelet)", spec: k8sv1.NodeSpec{Taints: []k8sv1.Taint{{Key: k8sv1.TaintNodeNotReady, Effect: k8sv1.TaintEffectNoSchedule}}}, want: true},
		{name: "PreferNoSchedule", spec: k8sv1.NodeSpec{Taints: []k8sv1.Taint{{Key: "x", Effect: k8sv1.TaintEffectPreferNoSchedule}}}, want: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			node := &k8sv1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Spec: c.spec}
			vmi := &v1.VirtualMachineInstance{Spec: v1.VirtualMachineInstanceSpec{Tolerations: c.tolerations}}
			got, err := Fits(vmi, node, nil)
			if err != nil || got != c.want {
				t.Errorf("Fits = %v, %v; want %v", got, err, c.want)
			}
		})
	}
}
