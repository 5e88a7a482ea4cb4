package agent

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"
)

// BenchmarkSyncMemoHas measures the memo's check on every reconcile of a
// running VMI (the test guest's spec), for an object whose status was
// written since it was recorded (another resourceVersion, the same inputs).
//
//	(cd examples/nodeagent && go test ./agent -run '^$' -bench SyncMemoHas -benchmem)
func BenchmarkSyncMemoHas(b *testing.B) {
	grace := int64(0)
	vmi := &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "u1", ResourceVersion: "10",
			Annotations: map[string]string{"kubevirt.io/latest-observed-api-version": "v1"}},
		Spec: v1.VirtualMachineInstanceSpec{
			TerminationGracePeriodSeconds: &grace,
			Domain: v1.DomainSpec{
				Memory: &v1.Memory{Guest: resource.NewQuantity(128<<20, resource.BinarySI)},
				Firmware: &v1.Firmware{KernelBoot: &v1.KernelBoot{KernelArgs: "console=ttyS0 quiet",
					Container: &v1.KernelBootContainer{Image: "localhost/vmi2libvirt/testguest:v1", KernelPath: "/boot/vmlinuz", InitrdPath: "/boot/initrd.img"}}},
			},
		},
	}
	m := newSyncMemo()
	m.record(vmi)
	later := vmi.DeepCopy()
	later.ResourceVersion = "11"
	b.ReportAllocs()
	for b.Loop() {
		if !m.has(later) {
			b.Fatal("not synced")
		}
	}
}
