package api

import (
	"fmt"
	"net"
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/internal/pciaddr"
	"github.com/vmi2libvirt/vmi2libvirt/internal/vocab"
)

// masqueradeBridgeMAC is the MAC KubeVirt keeps for the in-pod bridge of
// masquerade interfaces.
const masqueradeBridgeMAC = "02:00:00:00:00:00"

var ifaceNameSyntax = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// validateNetworks applies KubeVirt's network rules: unique names, exactly
// one source (pod or multus), a networkName for multus, at most one pod
// network and one multus default network and not both, every network used
// by an interface of the same name (whose name syntax the interface rules
// check).
func validateNetworks(vmi *v1.VirtualMachineInstance) field.ErrorList {
	var errs field.ErrorList
	ifaces := make(map[string]bool, len(vmi.Spec.Domain.Devices.Interfaces))
	for _, iface := range vmi.Spec.Domain.Devices.Interfaces {
		ifaces[iface.Name] = true
	}
	seen := newUniqueNames(networksPath)
	pods, multusDefaults := 0, 0
	for i, n := range vmi.Spec.Networks {
		p := networksPath.Index(i)
		namePath := p.Child("name")
		if n.Name == "" {
			errs = append(errs, field.Required(namePath, "a network needs a name"))
		} else {
			if e := seen.add(i, n.Name, ""); e != nil {
				errs = append(errs, e)
			}
			if !ifaces[n.Name] {
				errs = append(errs, field.Invalid(namePath, n.Name, "no interface in "+ifacesPath.String()+" uses this network"))
			}
		}
		switch {
		case n.Pod == nil && n.Multus == nil:
			errs = append(errs, field.Required(p, "a network needs a source: pod or multus"))
		case n.Pod != nil && n.Multus != nil:
			errs = append(errs, field.Invalid(p, n.Name, "a network has only one source: pod or multus"))
		}
		if n.Pod != nil {
			pods++
		}
		if n.Multus != nil {
			if n.Multus.NetworkName == "" {
				errs = append(errs, field.Required(p.Child("multus", "networkName"), "the NetworkAttachmentDefinition to attach to"))
			}
			if n.Multus.Default {
				multusDefaults++
			}
		}
	}
	if pods > 1 {
		errs = append(errs, field.Invalid(networksPath, pods, "at most one pod network"))
	}
	if multusDefaults > 1 {
		errs = append(errs, field.Invalid(networksPath, multusDefaults, "at most one multus default network"))
	}
	if pods > 0 && multusDefaults > 0 {
		errs = append(errs, field.Invalid(networksPath, "pod and multus default", "a pod network cannot be defined with a multus default network"))
	}
	return errs
}

// validateInterfaces applies KubeVirt's interface rules: unique names of
// [A-Za-z0-9_-] that name a network, exactly one binding (bridge,
// masquerade, sriov, passtBinding or a binding plugin), none of the
// discontinued ones (slirp, passt, macvtap), masquerade and passtBinding
// only on the pod network and masquerade not with the MAC of the in-pod
// bridge, a known model, state (absent only for bridge and not on the
// default network, up/down not for SR-IOV), MAC and PCI address syntax —
// and, as this library's own rule, a unicast MAC (libvirt refuses others) —
// forwarded ports (named uniquely, 1-65535, TCP or UDP) on the pod network,
// DHCP private options 224-254 without duplicates and NTP servers that are
// IPv4 addresses.
func validateInterfaces(vmi *v1.VirtualMachineInstance) field.ErrorList {
	var errs field.ErrorList
	networks := make(map[string]*v1.Network, len(vmi.Spec.Networks))
	var defaultNet string
	for i := range vmi.Spec.Networks {
		n := &vmi.Spec.Networks[i]
		if _, ok := networks[n.Name]; !ok {
			networks[n.Name] = n
		}
		if defaultNet == "" && (n.Pod != nil || (n.Multus != nil && n.Multus.Default)) {
			defaultNet = n.Name
		}
	}
	seen := newUniqueNames(ifacesPath)
	for i := range vmi.Spec.Domain.Devices.Interfaces {
		iface := &vmi.Spec.Domain.Devices.Interfaces[i]
		p := ifacesPath.Index(i)
		namePath := p.Child("name")
		if !ifaceNameSyntax.MatchString(iface.Name) {
			errs = append(errs, field.Invalid(namePath, iface.Name, "may only contain letters, digits, '-' and '_'"))
		}
		if e := seen.add(i, iface.Name, "only one interface per network"); e != nil {
			errs = append(errs, e)
		}
		netw, hasNet := networks[iface.Name]
		if !hasNet {
			errs = append(errs, field.Invalid(namePath, iface.Name, "no network of this name in "+networksPath.String()))
			netw = &v1.Network{}
		}
		errs = append(errs, validateBinding(iface, p, netw, hasNet)...)
		if iface.Model != "" && !vocab.InterfaceModels.Has(iface.Model) {
			errs = append(errs, field.NotSupported(p.Child("model"), iface.Model, vocab.InterfaceModels))
		}
		errs = append(errs, validateIfaceState(iface, p, defaultNet)...)
		if iface.MacAddress != "" {
			mac, err := net.ParseMAC(iface.MacAddress)
			switch {
			case err != nil:
				errs = append(errs, field.Invalid(p.Child("macAddress"), iface.MacAddress, "not a MAC address such as 02:00:00:12:34:56"))
			case len(mac) != 6:
				errs = append(errs, field.Invalid(p.Child("macAddress"), iface.MacAddress, "not a 6-byte (EUI-48) MAC address"))
			case mac[0]&1 != 0:
				// KubeVirt lets it through; libvirt refuses to define the domain.
				errs = append(errs, field.Invalid(p.Child("macAddress"), iface.MacAddress, "a multicast MAC address: a NIC needs a unicast one (even first byte)"))
			}
		}
		if _, ok := pciaddr.Parse(iface.PciAddress); iface.PciAddress != "" && !ok {
			errs = append(errs, field.Invalid(p.Child("pciAddress"), iface.PciAddress, "not a PCI address of the form 0000:00:00.0 (domain:bus:slot.function)"))
		}
		if netw.Pod != nil {
			errs = append(errs, validatePorts(iface, p)...)
		}
		if iface.DHCPOptions != nil {
			errs = append(errs, validateDHCP(iface.DHCPOptions, p.Child("dhcpOptions"))...)
		}
	}
	return errs
}

// validateBinding checks the binding method of an interface.
func validateBinding(iface *v1.Interface, p *field.Path, netw *v1.Network, hasNet bool) field.ErrorList {
	var errs field.ErrorList
	b := &iface.InterfaceBindingMethod
	for _, d := range []struct {
		set  bool
		name string
	}{{b.DeprecatedSlirp != nil, "slirp"}, {b.DeprecatedPasst != nil, "passt"}, {b.DeprecatedMacvtap != nil, "macvtap"}} {
		if d.set {
			errs = append(errs, field.Forbidden(p.Child(d.name), "the "+d.name+" binding was discontinued in KubeVirt v1.3"))
		}
	}
	// A discontinued binding counts as the interface's binding here: its
	// own error says what to change.
	n := len(errs)
	for _, set := range []bool{b.Bridge != nil, b.Masquerade != nil, b.SRIOV != nil, b.PasstBinding != nil, iface.Binding != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		errs = append(errs, field.Invalid(p, iface.Name, fmt.Sprintf("an interface needs exactly one binding (bridge, masquerade, sriov, passtBinding or binding), it has %d", n)))
	}
	if hasNet && b.Masquerade != nil && netw.Pod == nil {
		errs = append(errs, field.Invalid(p.Child("masquerade"), iface.Name, "masquerade is only implemented on the pod network"))
	}
	if b.Masquerade != nil && iface.MacAddress == masqueradeBridgeMAC {
		errs = append(errs, field.Invalid(p.Child("macAddress"), iface.MacAddress, "reserved for the in-pod bridge of masquerade interfaces"))
	}
	if hasNet && b.PasstBinding != nil && netw.Pod == nil {
		errs = append(errs, field.Invalid(p.Child("passtBinding"), iface.Name, "passtBinding is only implemented on the pod network"))
	}
	if iface.Binding != nil && iface.Binding.Name == "" {
		errs = append(errs, field.Required(p.Child("binding", "name"), "the name of the network binding plugin"))
	}
	return errs
}

// validateIfaceState checks the link state of an interface.
func validateIfaceState(iface *v1.Interface, p *field.Path, defaultNet string) field.ErrorList {
	if iface.State == "" {
		return nil
	}
	sp := p.Child("state")
	if !vocab.InterfaceStates.Has(string(iface.State)) {
		return field.ErrorList{field.NotSupported(sp, iface.State, vocab.InterfaceStates)}
	}
	var errs field.ErrorList
	if iface.SRIOV != nil && iface.State != v1.InterfaceStateAbsent {
		errs = append(errs, field.Invalid(sp, iface.State, "SR-IOV interfaces do not support link state up/down"))
	}
	if iface.State == v1.InterfaceStateAbsent {
		if iface.Bridge == nil {
			errs = append(errs, field.Invalid(sp, iface.State, "absent is only supported with the bridge binding"))
		}
		if iface.Name == defaultNet {
			errs = append(errs, field.Invalid(sp, iface.State, "absent is not supported on the default network"))
		}
	}
	return errs
}

// validatePorts checks forwarded ports of an interface on the pod network.
func validatePorts(iface *v1.Interface, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := map[string]bool{}
	for j, port := range iface.Ports {
		pp := p.Child("ports").Index(j)
		if port.Name != "" {
			if names[port.Name] {
				errs = append(errs, field.Duplicate(pp.Child("name"), port.Name))
			}
			names[port.Name] = true
			errs = appendMsgs(errs, pp.Child("name"), port.Name, validation.IsValidPortName(port.Name))
		}
		switch {
		case port.Port == 0:
			errs = append(errs, field.Required(pp.Child("port"), "the port number"))
		case port.Port < 0 || port.Port > 65535:
			errs = append(errs, field.Invalid(pp.Child("port"), port.Port, "must be between 1 and 65535"))
		}
		if port.Protocol != "" && !vocab.PortProtocols.Has(port.Protocol) {
			errs = append(errs, field.NotSupported(pp.Child("protocol"), port.Protocol, vocab.PortProtocols))
		}
	}
	return errs
}

// validateDHCP checks DHCP options.
func validateDHCP(o *v1.DHCPOptions, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[int]bool{}
	for j, po := range o.PrivateOptions {
		pp := p.Child("privateOptions").Index(j).Child("option")
		if seen[po.Option] {
			errs = append(errs, field.Duplicate(pp, po.Option))
		}
		seen[po.Option] = true
		if po.Option < 224 || po.Option > 254 {
			errs = append(errs, field.Invalid(pp, po.Option, "private DHCP options are 224 to 254"))
		}
	}
	for j, s := range o.NTPServers {
		if net.ParseIP(s).To4() == nil {
			errs = append(errs, field.Invalid(p.Child("ntpServers").Index(j), s, "must be an IPv4 address"))
		}
	}
	return errs
}
