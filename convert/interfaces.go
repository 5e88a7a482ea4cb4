package convert

import (
	"fmt"
	"net"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// libvirtMAC is the MAC address an interface is given: as written when
// libvirt's schema takes it (KubeVirt passes it through unchanged, upper
// case included), else the address parsed (net.ParseMAC) and written in
// libvirt's colon syntax (KubeVirt would pass 02-00-… through too, which
// libvirt refuses). ok is false when written is not a 6-byte MAC address.
func libvirtMAC(written string) (mac string, ok bool) {
	if isColonMAC(written) {
		return written, true
	}
	hw, err := net.ParseMAC(written)
	if err != nil || len(hw) != 6 {
		return "", false
	}
	return hw.String(), true
}

// isColonMAC tells whether s has the MAC syntax of libvirt's schema: six
// colon-separated pairs of hex digits, either case.
func isColonMAC(s string) bool {
	if len(s) != len("00:00:00:00:00:00") {
		return false
	}
	for i := range len(s) {
		if i%3 == 2 {
			if s[i] != ':' {
				return false
			}
		} else if !isHexDigit(s[i]) {
			return false
		}
	}
	return true
}

func isHexDigit(b byte) bool {
	return '0' <= b && b <= '9' || 'a' <= b && b <= 'f' || 'A' <= b && b <= 'F'
}

// maxNetworkQueues caps the queues of a multi-queue virtio NIC: the most a
// tap device has (KubeVirt's MultiQueueMaxQueues).
const maxNetworkQueues = 256

// interfaces adds a libvirt <interface> for every bridge or masquerade
// interface of the VMI, in spec order, attached as the Layout says, then
// one <interface type="hostdev"> for every SR-IOV interface with a MAC
// address (so that libvirt sets the VF's MAC through its physical
// function, as KubeVirt's SR-IOV CNI does on a node). The other SR-IOV
// interfaces are host devices (the hostDevices area); absent interfaces
// are left out. The bindings a plain host lacks are refused.
func (c *converter) interfaces(d *libvirtxml.Domain) error {
	devs := &c.spec.Domain.Devices
	n := len(devs.Interfaces)
	if n == 0 {
		return nil
	}
	var probs problems
	list := make([]libvirtxml.DomainInterface, 0, n)
	parts := make([]interfaceParts, n)
	for i := range devs.Interfaces {
		iface := &devs.Interfaces[i]
		if iface.State == v1.InterfaceStateAbsent || iface.SRIOV != nil {
			continue
		}
		nic, ok, err := c.domainInterface(itemPath{interfacesPath, i}, iface, &parts[i])
		if err != nil {
			if err := probs.add(err); err != nil {
				return err
			}
			continue
		}
		if ok {
			list = append(list, nic)
		}
	}
	for i := range devs.Interfaces {
		iface := &devs.Interfaces[i]
		if iface.SRIOV == nil || iface.MacAddress == "" || iface.State == v1.InterfaceStateAbsent {
			continue
		}
		nic, err := c.sriovInterface(i, iface)
		if err := probs.add(err); err != nil {
			return err
		}
		if nic.Source != nil {
			list = append(list, nic)
		}
	}
	if len(list) > 0 {
		d.Devices.Interfaces = list
	}
	return probs.err()
}

// interfaceParts are what one interface points to. The interfaces area
// allocates the parts of all the VMI's interfaces in one slice, one
// interfaceParts per spec.domain.devices.interfaces entry; what only some
// interfaces have (a libvirt network, a passt backend, an ACPI index, a
// link state, virtio queues) is allocated for those alone.
type interfaceParts struct {
	alias    libvirtxml.DomainAlias
	model    libvirtxml.DomainInterfaceModel
	source   libvirtxml.DomainInterfaceSource
	ethernet libvirtxml.DomainInterfaceSourceEthernet
	user     libvirtxml.DomainInterfaceSourceUser
	bridge   libvirtxml.DomainInterfaceSourceBridge
	target   libvirtxml.DomainInterfaceTarget
	mac      libvirtxml.DomainInterfaceMAC
	boot     libvirtxml.DomainDeviceBoot
	rom      libvirtxml.DomainROM
}

// refusedBindings are the bindings a plain libvirt host lacks: they need
// KubeVirt's pod networking machinery or a cluster's binding plugins.
// (The discontinued slirp, macvtap and passt bindings are api.Validate's.)
var refusedBindings = []struct {
	set   func(*v1.Interface) bool
	field string
	why   string
}{
	{func(i *v1.Interface) bool { return i.PasstBinding != nil }, "passtBinding", "the passt binding needs KubeVirt's pod network setup; use bridge or masquerade with a Layout that attaches them"},
	{func(i *v1.Interface) bool { return i.Binding != nil }, "binding", "network binding plugins need a cluster's KubeVirt configuration"},
}

// networkByName returns the spec.networks entry of an interface.
func (c *converter) networkByName(name string) *v1.Network {
	for i := range c.spec.Networks {
		if c.spec.Networks[i].Name == name {
			return &c.spec.Networks[i]
		}
	}
	return nil
}

// domainInterface builds the <interface> of a bridge or masquerade interface
// as KubeVirt's tap binding does: model, MAC, guest PCI address, ACPI index,
// boot order (the NIC's option ROM is switched off unless it boots), link
// state, virtio queues, alias ua-<name>. ok is false for an interface
// without a network (which api.Validate refuses): it has no <interface>.
func (c *converter) domainInterface(path itemPath, iface *v1.Interface, parts *interfaceParts) (nic libvirtxml.DomainInterface, ok bool, err error) {
	for _, r := range refusedBindings {
		if r.set(iface) {
			return nic, false, field.Forbidden(path.Child(r.field), r.why)
		}
	}
	network := c.networkByName(iface.Name)
	if network == nil {
		return nic, false, nil
	}
	parts.alias.Name = c.text.join(UserAliasPrefix, iface.Name)
	nic.Alias = &parts.alias

	parts.model.Type = iface.Model
	switch iface.Model {
	case "", v1.VirtIO:
		parts.model.Type = c.facts.virtioModel
		if q := c.networkQueues(); q > 0 || c.facts.iommu {
			nic.Driver = &libvirtxml.DomainInterfaceDriver{Name: "vhost", Queues: q, IOMMU: c.iommuOn()}
		}
	}
	nic.Model = &parts.model

	att, err := c.opts.Layout.Interface(c.vmi, iface, network)
	if err != nil {
		return nic, false, err
	}
	if err := attach(&nic, parts, att); err != nil {
		return nic, false, field.Invalid(path.path(), iface.Name, err.Error())
	}
	if att.Type == "user" && att.Backend == "passt" {
		if !c.opts.HostFacts.Has(LackPasst) {
			return nic, false, refuseLack(path.path(), LackPasst)
		}
		nic.PortForward = passtPortForwards(iface.Ports)
	}

	if iface.MacAddress != "" {
		if mac, ok := libvirtMAC(iface.MacAddress); ok {
			parts.mac.Address = mac
			nic.MAC = &parts.mac
		}
	}
	nic.Address = guestPCIAddress(iface.PciAddress)
	if iface.ACPIIndex > 0 {
		nic.ACPI = &libvirtxml.DomainDeviceACPI{Index: uint(iface.ACPIIndex)}
	}
	if iface.BootOrder != nil {
		parts.boot.Order = *iface.BootOrder
		nic.Boot = &parts.boot
	} else {
		parts.rom.Enabled = "no"
		nic.ROM = &parts.rom
	}
	if iface.State == v1.InterfaceStateLinkDown {
		nic.Link = &libvirtxml.DomainInterfaceLink{State: "down"}
	}
	return nic, true, nil
}

// sriovInterface is the <interface type="hostdev"> of an SR-IOV interface
// with a MAC address: the VF Options.HostDevices names for it, in the
// guest at the interface's PCI address and boot order, alias
// ua-sriov-<name>.
func (c *converter) sriovInterface(i int, iface *v1.Interface) (libvirtxml.DomainInterface, error) {
	hostDev, _, err := c.opts.hostDevice(interfacesPath.Index(i).Child("sriov"), iface.Name, false, hostDevPCI)
	if err != nil {
		return libvirtxml.DomainInterface{}, err
	}
	source, _ := parsePCIAddress(hostDev.PCIAddress) // checked by hostDevice
	nic := libvirtxml.DomainInterface{
		Managed: "no",
		Source: &libvirtxml.DomainInterfaceSource{
			Hostdev: &libvirtxml.DomainInterfaceSourceHostdev{PCI: &libvirtxml.DomainHostdevSubsysPCISource{Address: source}},
		},
		Alias:   c.hostDeviceAlias(aliasPrefixSRIOV, iface.Name),
		Address: guestPCIAddress(iface.PciAddress),
	}
	if mac, err := net.ParseMAC(iface.MacAddress); err == nil && len(mac) == 6 {
		nic.MAC = &libvirtxml.DomainInterfaceMAC{Address: mac.String()}
	}
	if iface.BootOrder != nil {
		nic.Boot = &libvirtxml.DomainDeviceBoot{Order: *iface.BootOrder}
	}
	return nic, nil
}

// networkQueues is the queue count of virtio NICs: one per vCPU (at most
// maxNetworkQueues) when spec.domain.devices.networkInterfaceMultiqueue is
// true, else 0 (libvirt's default, one queue).
func (c *converter) networkQueues() uint {
	if mq := c.spec.Domain.Devices.NetworkInterfaceMultiQueue; mq == nil || !*mq {
		return 0
	}
	return min(c.facts.topology.count(), maxNetworkQueues)
}

// attach writes a Layout's host-side attachment into an <interface>.
func attach(nic *libvirtxml.DomainInterface, parts *interfaceParts, att InterfaceAttachment) error {
	src := &parts.source
	switch att.Type {
	case "ethernet":
		src.Ethernet = &parts.ethernet
	case "user", "":
		src.User = &parts.user
	case "bridge":
		if att.Source == "" {
			return fmt.Errorf("the layout attaches it to a bridge without naming one")
		}
		parts.bridge.Bridge = att.Source
		src.Bridge = &parts.bridge
	case "network":
		if att.Source == "" {
			return fmt.Errorf("the layout attaches it to a libvirt network without naming one")
		}
		src.Network = &libvirtxml.DomainInterfaceSourceNetwork{Network: att.Source}
	default:
		return fmt.Errorf("the layout attaches it as %q; supported: ethernet, user, bridge, network", att.Type)
	}
	nic.Source = src
	if att.Target != "" {
		parts.target = libvirtxml.DomainInterfaceTarget{Dev: att.Target, Managed: att.Managed}
		nic.Target = &parts.target
	}
	if att.Backend != "" {
		if src.User == nil {
			return fmt.Errorf("the layout sets backend %q on a %s attachment; backends are for user-mode networking", att.Backend, att.Type)
		}
		nic.Backend = &libvirtxml.DomainInterfaceBackend{Type: att.Backend}
	}
	return nil
}

// passtPortForwards forwards an interface's ports into the guest through a
// passt backend, TCP and UDP in one range list each; no ports forwards all.
func passtPortForwards(ports []v1.Port) []libvirtxml.DomainInterfaceSourcePortForward {
	var tcp, udp []libvirtxml.DomainInterfaceSourcePortForwardRange
	for _, p := range ports {
		r := libvirtxml.DomainInterfaceSourcePortForwardRange{Start: uint(p.Port)}
		if strings.EqualFold(p.Protocol, "udp") {
			udp = append(udp, r)
		} else {
			tcp = append(tcp, r)
		}
	}
	if len(tcp) == 0 && len(udp) == 0 {
		return []libvirtxml.DomainInterfaceSourcePortForward{{Proto: "tcp"}, {Proto: "udp"}}
	}
	var out []libvirtxml.DomainInterfaceSourcePortForward
	if len(tcp) > 0 {
		out = append(out, libvirtxml.DomainInterfaceSourcePortForward{Proto: "tcp", Ranges: tcp})
	}
	if len(udp) > 0 {
		out = append(out, libvirtxml.DomainInterfaceSourcePortForward{Proto: "udp", Ranges: udp})
	}
	return out
}
