package convert

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
)

// primaryTapName is the tap device of the VMI's primary (pod, or default
// multus) network in virt-launcher's pod.
const primaryTapName = "tap0"

// Interface returns the tap device virt-launcher's pod has for the
// interface's network, as an unmanaged ethernet attachment: "tap0" for the
// pod network (or a default multus network), and "tap" followed by the first
// 11 hex digits of the SHA-256 of the network's name for a secondary multus
// network (KubeVirt's hashed pod interface name, with "pod" replaced by
// "tap").
func (KubeVirtLayout) Interface(vmi *v1.VirtualMachineInstance, iface *v1.Interface, network *v1.Network) (InterfaceAttachment, error) {
	tap := primaryTapName
	if m := network.Multus; m != nil && !m.Default {
		sum := sha256.Sum256([]byte(network.Name))
		tap = "tap" + hex.EncodeToString(sum[:])[:11]
	}
	return InterfaceAttachment{Type: "ethernet", Target: tap, Managed: "no"}, nil
}

// Interface returns the attachment of an interface on a plain host: the pod
// network attaches as PodNetwork says (user-mode networking when it is the
// zero value), a multus network as Networks[networkName] says. A multus
// network missing from Networks is refused with an error naming
// spec.networks[i].multus.networkName. DHCP options are refused: on a pod
// they are served by KubeVirt's own DHCP server, which a plain host lacks.
func (l HostLayout) Interface(vmi *v1.VirtualMachineInstance, iface *v1.Interface, network *v1.Network) (InterfaceAttachment, error) {
	if iface.DHCPOptions != nil {
		return InterfaceAttachment{}, field.Forbidden(interfacePath(vmi, iface.Name).Child("dhcpOptions"),
			"DHCP options are served by KubeVirt's pod DHCP server, which the host layout does not have")
	}
	if m := network.Multus; m != nil {
		att, ok := l.Networks[m.NetworkName]
		if !ok {
			return InterfaceAttachment{}, field.Invalid(networkPath(vmi, network.Name).Child("multus", "networkName"), m.NetworkName,
				fmt.Sprintf("not mapped to a host bridge or libvirt network (HostLayout.Networks[%q])", m.NetworkName))
		}
		return withDefaultType(att), nil
	}
	return withDefaultType(l.PodNetwork), nil
}

// withDefaultType reads an attachment without a type as user-mode
// networking.
func withDefaultType(att InterfaceAttachment) InterfaceAttachment {
	if att.Type == "" {
		att.Type = "user"
	}
	return att
}

// interfacePath is the path of the spec.domain.devices.interfaces entry
// with the given name.
func interfacePath(vmi *v1.VirtualMachineInstance, name string) *field.Path {
	p := interfacesPath
	for i, iface := range vmi.Spec.Domain.Devices.Interfaces {
		if iface.Name == name {
			return p.Index(i)
		}
	}
	return p.Key(name)
}

// networkPath is the path of the spec.networks entry with the given name.
func networkPath(vmi *v1.VirtualMachineInstance, name string) *field.Path {
	p := networksPath
	for i, n := range vmi.Spec.Networks {
		if n.Name == name {
			return p.Index(i)
		}
	}
	return p.Key(name)
}
