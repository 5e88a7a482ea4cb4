package vm

import (
	"encoding/json"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/api"
)

// newVMI is the VMI a VM starts, as KubeVirt's VM controller makes it
// (SetupVMIFromVM and startVMI): the VMI that the library's api.Decode
// makes of the VM — the VM's name and namespace, the template's labels,
// annotations and spec, the firmware UUID derived from the VM's name when
// the template names none, the default input of autoattachInputDevice —
// with the VM as its controlling owner, KubeVirt's VM controller
// finalizer, the VM's generation (annotation kubevirt.io/vm-generation)
// and the revision it was made from (status.virtualMachineRevisionName),
// and a paused start when the VM's start request asks for one. KubeVirt's
// admission defaults (a disk per volume, the default pod network...) are
// the mutating webhook's, as in KubeVirt.
func newVMI(vm *v1.VirtualMachine, revision string) (*v1.VirtualMachineInstance, error) {
	// Only what shapes the VMI: Decode checks every field of what it is
	// given, and the VM's status and managed fields are not its business.
	doc, err := json.Marshal(struct {
		APIVersion string                `json:"apiVersion"`
		Kind       string                `json:"kind"`
		Metadata   metav1.ObjectMeta     `json:"metadata"`
		Spec       v1.VirtualMachineSpec `json:"spec"`
	}{api.APIVersion, api.KindVM, metav1.ObjectMeta{Name: vm.Name, Namespace: vm.Namespace}, vm.Spec})
	if err != nil {
		return nil, err
	}
	vmi, err := api.Decode(doc)
	if err != nil {
		return nil, err
	}
	vmi.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(vm, v1.VirtualMachineGroupVersionKind)}
	vmi.Finalizers = append(vmi.Finalizers, v1.VirtualMachineControllerFinalizer)
	metav1.SetMetaDataAnnotation(&vmi.ObjectMeta, v1.VirtualMachineGenerationAnnotation, strconv.FormatInt(vm.Generation, 10))
	vmi.Status.VirtualMachineRevisionName = revision
	if hasStartPausedRequest(vm) {
		paused := v1.StartStrategyPaused
		vmi.Spec.StartStrategy = &paused
	}
	return vmi, nil
}
