package convert

import (
	"fmt"

	v1 "kubevirt.io/api/core/v1"
)

// KubeVirtLayout is the layout virt-launcher uses inside its pod: the paths
// below /var/run/kubevirt*, tap devices for pod and multus interfaces.
// Domains converted with it can be compared with KubeVirt's own.
type KubeVirtLayout struct{}

// Volume returns the pod path of spec.volumes[index]. Not written yet.
func (KubeVirtLayout) Volume(vmi *v1.VirtualMachineInstance, index int) (DiskSource, error) {
	return DiskSource{}, fmt.Errorf("not written yet")
}

// Interface returns a tap attachment. Not written yet.
func (KubeVirtLayout) Interface(vmi *v1.VirtualMachineInstance, iface *v1.Interface, network *v1.Network) (InterfaceAttachment, error) {
	return InterfaceAttachment{Type: "ethernet"}, nil
}

// Paths returns the pod paths of the VMI's sockets and logs. Not written yet.
func (KubeVirtLayout) Paths(vmi *v1.VirtualMachineInstance) Paths {
	return Paths{}
}
