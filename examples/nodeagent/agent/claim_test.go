package agent

import (
	"context"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/testcluster"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
)

func TestClaimable(t *testing.T) {
	node := nodeObject("node-a", labels.Set{"zone": "a", "gpu": "yes"})
	affinity := func(op k8sv1.NodeSelectorOperator, key string, values ...string) *k8sv1.Affinity {
		return &k8sv1.Affinity{NodeAffinity: &k8sv1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &k8sv1.NodeSelector{
			NodeSelectorTerms: []k8sv1.NodeSelectorTerm{{MatchExpressions: []k8sv1.NodeSelectorRequirement{{Key: key, Operator: op, Values: values}}}},
		}}}
	}
	deleting := metav1.Now()
	cases := []struct {
		name string
		vmi  v1.VirtualMachineInstance
		want bool
		err  string
	}{
		{name: "no selector: any node", want: true},
		{name: "selector matches", vmi: v1.VirtualMachineInstance{Spec: v1.VirtualMachineInstanceSpec{NodeSelector: map[string]string{"zone": "a"}}}, want: true},
		{name: "the node's hostname label", vmi: v1.VirtualMachineInstance{Spec: v1.VirtualMachineInstanceSpec{NodeSelector: map[string]string{k8sv1.LabelHostname: "node-a"}}}, want: true},
		{name: "another hostname", vmi: v1.VirtualMachineInstance{Spec: v1.VirtualMachineInstanceSpec{NodeSelector: map[string]string{k8sv1.LabelHostname: "node-b"}}}},
		{name: "one label of two differs", vmi: v1.VirtualMachineInstance{Spec: v1.VirtualMachineInstanceSpec{NodeSelector: map[string]string{"zone": "a", "gpu": "no"}}}},
		{name: "required affinity In", vmi: v1.VirtualMachineInstance{Spec: v1.VirtualMachineInstanceSpec{Affinity: affinity(k8sv1.NodeSelectorOpIn, "zone", "b", "a")}}, want: true},
		{name: "required affinity NotIn", vmi: v1.VirtualMachineInstance{Spec: v1.VirtualMachineInstanceSpec{Affinity: affinity(k8sv1.NodeSelectorOpNotIn, "zone", "a")}}},
		{name: "affinity that cannot be read", vmi: v1.VirtualMachineInstance{Spec: v1.VirtualMachineInstanceSpec{Affinity: affinity(k8sv1.NodeSelectorOpGt, "gpu", "x")}},
			err: `spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: "x"`},
		{name: "a machine type the node's labels lack", vmi: v1.VirtualMachineInstance{Spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{Machine: &v1.Machine{Type: "q35"}}}}},
		{name: "SEV the node's labels lack", vmi: v1.VirtualMachineInstance{Spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{LaunchSecurity: &v1.LaunchSecurity{SEV: &v1.SEV{}}}}}},
		{name: "bound already", vmi: v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1.NodeNameLabel: "node-b"}}}},
		{name: "being deleted", vmi: v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleting}}},
		{name: "ended", vmi: v1.VirtualMachineInstance{Status: v1.VirtualMachineInstanceStatus{Phase: v1.Failed}}},
		{name: "invtsc, waiting for the control plane's topology hints", vmi: invtsc(nil)},
		{name: "invtsc, hints of no node's frequency", vmi: invtsc(&v1.TopologyHints{TSCFrequency: new(int64)}), want: true},
		{name: "invtsc, hints of a frequency the node's labels lack", vmi: invtsc(&v1.TopologyHints{TSCFrequency: ptr.To(int64(2_000_000_000))})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := claimable(&c.vmi, node, nodeapi.Scheduling{})
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one holding %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Errorf("claimable = %v, %v; want %v", got, err, c.want)
			}
		})
	}
	if got := nodeObject("node-a", labels.Set{k8sv1.LabelHostname: "given"}).Labels[k8sv1.LabelHostname]; got != "given" {
		t.Errorf("a hostname label given with -node-labels: %q, want it kept", got)
	}
}

// invtsc is an amd64 VMI that requires the invtsc CPU feature (a fixed
// TSC frequency), with topology hints h.
func invtsc(h *v1.TopologyHints) v1.VirtualMachineInstance {
	v := v1.VirtualMachineInstance{Spec: v1.VirtualMachineInstanceSpec{Architecture: "amd64", Domain: v1.DomainSpec{
		CPU: &v1.CPU{Features: []v1.CPUFeature{{Name: "invtsc", Policy: "require"}}}}}}
	v.Status.TopologyHints = h
	return v
}

// TestBindRace: two agents that read the same unbound VMI both try to
// bind it; the API server's optimistic concurrency lets the first through
// and refuses the second, which learns who won and leaves the VMI alone.
func TestBindRace(t *testing.T) {
	c := testcluster.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	scheme, err := NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "contested"}}
	if err := cl.Create(ctx, vmi); err != nil {
		t.Fatal(err)
	}
	seenByA, seenByB := vmi.DeepCopy(), vmi.DeepCopy() // both read the same version

	if winner, err := bind(ctx, cl, cl, seenByA, "node-a"); err != nil || winner != "node-a" {
		t.Fatalf("first bind: winner %q, %v; want node-a", winner, err)
	}
	if winner, err := bind(ctx, cl, cl, seenByB, "node-b"); err != nil || winner != "node-a" {
		t.Fatalf("second bind from the same version: winner %q, %v; want node-a (it lost)", winner, err)
	}
	var got v1.VirtualMachineInstance
	if err := cl.Get(ctx, client.ObjectKeyFromObject(vmi), &got); err != nil {
		t.Fatal(err)
	}
	if got.Labels[v1.NodeNameLabel] != "node-a" {
		t.Errorf("label %q after the race, want node-a", got.Labels[v1.NodeNameLabel])
	}

	// A change that is not a bind (a label of someone else's) also fails
	// the bind: the VMI is still unbound, and the caller reads it again.
	other := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "changed"}}
	if err := cl.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	stale := other.DeepCopy()
	patch := client.MergeFrom(other.DeepCopy())
	metav1.SetMetaDataLabel(&other.ObjectMeta, "example.com/team", "x")
	if err := cl.Patch(ctx, other, patch); err != nil {
		t.Fatal(err)
	}
	if winner, err := bind(ctx, cl, cl, stale, "node-b"); err != nil || winner != "" {
		t.Errorf("bind of a stale copy of a VMI still unbound: winner %q, %v; want \"\"", winner, err)
	}
}
