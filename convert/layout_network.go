package convert

import v1 "kubevirt.io/api/core/v1"

// Interface returns a tap attachment, as virt-launcher's pod has. Not written yet.
func (KubeVirtLayout) Interface(vmi *v1.VirtualMachineInstance, iface *v1.Interface, network *v1.Network) (InterfaceAttachment, error) {
	return InterfaceAttachment{Type: "ethernet"}, nil
}

// Interface returns the attachment of an interface. Not written yet.
func (l HostLayout) Interface(vmi *v1.VirtualMachineInstance, iface *v1.Interface, network *v1.Network) (InterfaceAttachment, error) {
	return InterfaceAttachment{Type: "user"}, nil
}
