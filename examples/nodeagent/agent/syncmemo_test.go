package agent

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestSyncMemo checks what counts as the VMI synced: the same UID and
// inputs (spec, annotations), whatever the resourceVersion and status.
func TestSyncMemo(t *testing.T) {
	base := func() *v1.VirtualMachineInstance {
		return &v1.VirtualMachineInstance{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "u1", ResourceVersion: "10",
				Annotations: map[string]string{"k": "v"}},
			Spec: v1.VirtualMachineInstanceSpec{Hostname: "h"},
		}
	}
	m := newSyncMemo()
	if m.has(base()) {
		t.Fatal("has before record")
	}
	m.record(base())
	cases := []struct {
		name   string
		change func(*v1.VirtualMachineInstance)
		want   bool
	}{
		{"same", func(*v1.VirtualMachineInstance) {}, true},
		{"status written", func(v *v1.VirtualMachineInstance) { v.ResourceVersion = "11"; v.Status.Phase = v1.Running }, true},
		{"annotation changed", func(v *v1.VirtualMachineInstance) { v.ResourceVersion = "12"; v.Annotations["k"] = "w" }, false},
		{"spec changed", func(v *v1.VirtualMachineInstance) { v.ResourceVersion = "13"; v.Spec.Hostname = "g" }, false},
		{"another UID", func(v *v1.VirtualMachineInstance) { v.UID = "u2" }, false},
		{"no UID", func(v *v1.VirtualMachineInstance) { v.UID = "" }, false},
		{"another name", func(v *v1.VirtualMachineInstance) { v.Name = "b" }, false},
	}
	for _, c := range cases {
		vmi := base()
		c.change(vmi)
		if got := m.has(vmi); got != c.want {
			t.Errorf("%s: has = %v, want %v", c.name, got, c.want)
		}
	}
	m.forget(client.ObjectKeyFromObject(base()))
	if m.has(base()) {
		t.Error("has after forget")
	}
}
