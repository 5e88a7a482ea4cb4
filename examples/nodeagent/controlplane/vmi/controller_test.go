package vmi

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/scheme"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
	"github.com/vmi2libvirt/vmi2libvirt/hostcaps"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// TestLifecycle applies the VMI controller's rules to VMIs.
func TestLifecycle(t *testing.T) {
	const agentFinalizer = nodeapi.Finalizer
	deleted := metav1.NewTime(now)
	owner := metav1.OwnerReference{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "vm", UID: "vm-uid", Controller: ptrTo(true)}
	vmi := func(name string, phase v1.VirtualMachineInstancePhase, node string, deleting bool, finalizers ...string) *v1.VirtualMachineInstance {
		o := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Finalizers: finalizers}}
		o.Status.Phase = phase
		if node != "" {
			o.Labels = map[string]string{v1.NodeNameLabel: node}
		}
		if deleting {
			o.DeletionTimestamp = &deleted
		}
		return o
	}
	owned := func(o *v1.VirtualMachineInstance) *v1.VirtualMachineInstance {
		o.OwnerReferences = []metav1.OwnerReference{owner}
		return o
	}
	cases := []struct {
		name       string
		vmi        *v1.VirtualMachineInstance
		vmExists   bool
		phase      v1.VirtualMachineInstancePhase
		finalizers []string
	}{
		{"deleted before a node took it", vmi("a", v1.Pending, "", true, v1.VirtualMachineInstanceFinalizer, "other"), false, v1.Failed, []string{"other"}},
		{"deleted, unset phase", vmi("b", "", "", true, "other"), false, v1.Failed, []string{"other"}},
		{"deleted, bound: the agent's", vmi("c", v1.Pending, "node01", true, v1.VirtualMachineInstanceFinalizer, agentFinalizer), false, v1.Pending,
			[]string{v1.VirtualMachineInstanceFinalizer, agentFinalizer}},
		{"deleted, claimed, never taken (no agent's finalizer)", vmi("i", v1.Pending, "node01", true, v1.VirtualMachineInstanceFinalizer), false, v1.Failed, []string{}},
		{"running", vmi("d", v1.Running, "node01", false, v1.VirtualMachineInstanceFinalizer), false, v1.Running, []string{v1.VirtualMachineInstanceFinalizer}},
		{"ended", vmi("e", v1.Succeeded, "node01", false, v1.VirtualMachineInstanceFinalizer, v1.DeprecatedVirtualMachineInstanceFinalizer, agentFinalizer), false,
			v1.Succeeded, []string{agentFinalizer}},
		{"ended, its VM there", owned(vmi("f", v1.Failed, "node01", false, v1.VirtualMachineControllerFinalizer, v1.VirtualMachineInstanceFinalizer)), true,
			v1.Failed, []string{v1.VirtualMachineControllerFinalizer}},
		{"ended, its VM gone", owned(vmi("g", v1.Failed, "node01", false, v1.VirtualMachineControllerFinalizer, v1.VirtualMachineInstanceFinalizer, agentFinalizer)), false,
			v1.Failed, []string{agentFinalizer}},
		{"deleted before a node took it, its VM gone", owned(vmi("h", v1.Pending, "", true, v1.VirtualMachineControllerFinalizer, v1.VirtualMachineInstanceFinalizer)), false,
			v1.Failed, []string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			orig := c.vmi.DeepCopy()
			got := lifecycle(c.vmi, func() bool { return c.vmExists }, now)
			if !equality.Semantic.DeepEqual(orig, c.vmi) {
				t.Error("lifecycle changed the VMI it was given")
			}
			if got.Status.Phase != c.phase || !slices.Equal(got.Finalizers, c.finalizers) {
				t.Errorf("phase %s finalizers %v, want %s %v", got.Status.Phase, got.Finalizers, c.phase, c.finalizers)
			}
			if c.phase == v1.Failed && c.vmi.Status.Phase != v1.Failed {
				ts := got.Status.PhaseTransitionTimestamps
				if len(ts) != 1 || ts[0].Phase != v1.Failed {
					t.Errorf("phase transitions %+v, want Failed's", ts)
				}
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

// TestTopologyHints: a new VMI that requires invtsc gets the lowest TSC
// frequency of the schedulable nodes and of those running VMIs, once; a
// VMI that needs none, one being deleted and one bound and running keep
// their status.
func TestTopologyHints(t *testing.T) {
	s, err := scheme.New()
	if err != nil {
		t.Fatal(err)
	}
	node := func(name, freq, schedulable string) *k8sv1.Node {
		return &k8sv1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			hostcaps.TSCFrequencyLabel: freq, v1.NodeSchedulable: schedulable}}}
	}
	vmi := func(name string, invtsc bool, edit func(*v1.VirtualMachineInstance)) *v1.VirtualMachineInstance {
		o := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		o.Spec.Architecture = "amd64"
		if invtsc {
			o.Spec.Domain.CPU = &v1.CPU{Features: []v1.CPUFeature{{Name: "invtsc", Policy: "require"}}}
		}
		o.Status.Phase = v1.Pending
		if edit != nil {
			edit(o)
		}
		return o
	}
	deleted := metav1.NewTime(now)
	objs := []client.Object{
		node("fast", "3000000000", "true"),
		node("slow-cordoned", "1000000000", "false"),
		node("busy", "2500000000", "false"),
		node("mid", "2800000000", "true"),
		vmi("running", false, func(o *v1.VirtualMachineInstance) { o.Status.Phase = v1.Running; o.Status.NodeName = "busy" }),
		vmi("new", true, nil),
		vmi("plain", false, nil),
		vmi("deleting", true, func(o *v1.VirtualMachineInstance) {
			o.DeletionTimestamp = &deleted
			o.Finalizers = []string{nodeapi.Finalizer}
			o.Labels = map[string]string{v1.NodeNameLabel: "fast"}
		}),
		vmi("scheduled", true, func(o *v1.VirtualMachineInstance) { o.Status.Phase = v1.Scheduled }),
	}
	// A plain tracker: the fake client's managed fields cannot walk the
	// VMI's uint64 status.runtimeUser.
	tracker := clienttesting.NewObjectTracker(s, serializer.NewCodecFactory(s).UniversalDecoder())
	patches := 0
	c := fake.NewClientBuilder().WithScheme(s).WithObjectTracker(tracker).WithObjects(objs...).
		WithInterceptorFuncs(interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, o client.Object, p client.Patch, opts ...client.PatchOption) error {
			patches++
			return c.Patch(ctx, o, p, opts...)
		}}).Build()
	r := &reconciler{client: c, log: slog.New(slog.DiscardHandler), now: func() time.Time { return now }}
	ctx := context.Background()
	hintsOf := func(name string) *v1.TopologyHints {
		t.Helper()
		key := types.NamespacedName{Namespace: "ns", Name: name}
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var got v1.VirtualMachineInstance
		if err := c.Get(ctx, key, &got); err != nil {
			t.Fatal(err)
		}
		return got.Status.TopologyHints
	}
	if h := hintsOf("new"); h == nil || h.TSCFrequency == nil || *h.TSCFrequency != 2_500_000_000 {
		t.Errorf("new VMI's hints %+v, want tscFrequency 2500000000 (busy's: it runs a VMI)", h)
	}
	if patches != 1 {
		t.Errorf("%d patches, want 1", patches)
	}
	// Given once: a node slower still does not change them, and nothing
	// is written again.
	patches = 0
	if err := c.Create(ctx, node("slower", "2000000000", "true")); err != nil {
		t.Fatal(err)
	}
	if h := hintsOf("new"); h == nil || *h.TSCFrequency != 2_500_000_000 {
		t.Errorf("new VMI's hints %+v after a slower node came, want them kept", h)
	}
	if patches != 0 {
		t.Errorf("%d patches of a VMI that has its hints, want none", patches)
	}
	for _, name := range []string{"plain", "deleting", "scheduled", "running"} {
		if h := hintsOf(name); h != nil {
			t.Errorf("%s: hints %+v, want none", name, h)
		}
	}
}
