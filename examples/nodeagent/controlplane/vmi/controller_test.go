package vmi

import (
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
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
