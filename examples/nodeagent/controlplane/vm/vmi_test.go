package vm

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/api"
)

// TestNewVMI: the VMI a VM starts, as KubeVirt's SetupVMIFromVM and
// startVMI make it.
func TestNewVMI(t *testing.T) {
	vm := vmWith(v1.RunStrategyAlways, "")
	vm.Generation = 7
	vm.Labels = map[string]string{"vm-label": "not the VMI's"}
	guest := resource.MustParse("64Mi")
	autoattach := true
	vm.Spec.Template = &v1.VirtualMachineInstanceTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}, Annotations: map[string]string{"note": "kept"}},
		Spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{
			Memory:  &v1.Memory{Guest: &guest},
			Devices: v1.Devices{AutoattachInputDevice: &autoattach},
		}},
	}
	vmi, err := newVMI(vm, "revision-start-vm-vm-uid-7")
	if err != nil {
		t.Fatal(err)
	}
	want := &v1.VirtualMachineInstance{
		TypeMeta: metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: "vm",
			Labels:      map[string]string{"app": "x"},
			Annotations: map[string]string{"note": "kept", v1.VirtualMachineGenerationAnnotation: "7"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine", Name: "vm", UID: "vm-uid",
				Controller: ptrTo(true), BlockOwnerDeletion: ptrTo(true)}},
			Finalizers: []string{v1.VirtualMachineControllerFinalizer},
		},
		Spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{
			Memory:   &v1.Memory{Guest: &guest},
			Firmware: &v1.Firmware{UUID: api.VMFirmwareUUID("vm")},
			Devices:  v1.Devices{AutoattachInputDevice: &autoattach, Inputs: []v1.Input{{Name: api.VMDefaultInputName}}},
		}},
		Status: v1.VirtualMachineInstanceStatus{VirtualMachineRevisionName: "revision-start-vm-vm-uid-7"},
	}
	if diff := cmp.Diff(want, vmi); diff != "" {
		t.Errorf("VMI (-want +got):\n%s", diff)
	}

	vm.Status.StateChangeRequests = []v1.VirtualMachineStateChangeRequest{{Action: v1.StartRequest, Data: map[string]string{v1.StartRequestDataPausedKey: v1.StartRequestDataPausedTrue}}}
	vmi, err = newVMI(vm, "r")
	if err != nil {
		t.Fatal(err)
	}
	if s := vmi.Spec.StartStrategy; s == nil || *s != v1.StartStrategyPaused {
		t.Errorf("a paused start: startStrategy %v, want Paused", s)
	}
}
