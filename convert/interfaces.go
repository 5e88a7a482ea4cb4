package convert

import (
	"fmt"
	"net"
	"slices"
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

// interfaceModels are the NIC models a VMI may ask for; virtio becomes the
// converter's virtio model (transitional or not).
var interfaceModels = []string{"e1000", "e1000e", "igb", "ne2k_pci", "pcnet", "rtl8139", v1.VirtIO}

// maxNetworkQueues caps the queues of a multi-queue virtio NIC: the most a
// tap device has (KubeVirt's MultiQueueMaxQueues).
const maxNetworkQueues = 256

// interfaces adds a libvirt <interface> for every bridge or masquerade
// interface of the VMI, in spec order, attached as the Layout says. SR-IOV
// interfaces become host devices (see hostDevices) and need an
// Options.HostDevices entry; absent interfaces are left out; every other
// binding is refused.
func (c *converter) interfaces(d *libvirtxml.Domain) error {
	devs := &c.spec.Domain.Devices
	n := len(devs.Interfaces)
	if n == 0 {
		return nil
	}
	var probs problems
	// An SR-IOV interface with a MAC address is added by the host devices
	// area: the list has room for every interface of the VMI.
	list := make([]libvirtxml.DomainInterface, 0, n)
	parts := make([]interfaceParts, n)
	for i := range devs.Interfaces {
		iface := &devs.Interfaces[i]
		path := itemPath{interfacesPath, i}
		if iface.State == v1.InterfaceStateAbsent {
			continue
		}
		nic, hostDevice, err := c.domainInterfaceOf(path, iface, &parts[i])
		if err != nil {
			if err := probs.add(err); err != nil {
				return err
			}
			continue
		}
		if hostDevice {
			continue // an SR-IOV interface, added by hostDevices
		}
		list = append(list, nic)
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

// domainInterfaceOf checks one interface of the VMI and returns its
// domain interface, or hostDevice true for an SR-IOV interface, which
// becomes a host device.
func (c *converter) domainInterfaceOf(path itemPath, iface *v1.Interface, parts *interfaceParts) (nic libvirtxml.DomainInterface, hostDevice bool, err error) {
	network := c.networkByName(iface.Name)
	if network == nil {
		return nic, false, field.Invalid(path.Child("name"), iface.Name, "no network of spec.networks has this name")
	}
	if err := checkBinding(path, iface); err != nil {
		return nic, false, err
	}
	if err := c.checkTag(path, iface.Tag); err != nil {
		return nic, false, err
	}
	if iface.SRIOV != nil {
		_, _, err := c.lookupHostDevice(path.Child("sriov"), iface.Name, false, hostDevPCI)
		return nic, true, err
	}
	nic, err = c.domainInterface(path, iface, network, parts)
	return nic, false, err
}

// checkBinding refuses the bindings that need KubeVirt's pod networking
// machinery or a cluster's binding plugins.
func checkBinding(path itemPath, iface *v1.Interface) error {
	refused := []struct {
		set   bool
		field string
		why   string
	}{
		{iface.DeprecatedSlirp != nil, "slirp", "the slirp binding was removed from KubeVirt (v1.3)"},
		{iface.DeprecatedMacvtap != nil, "macvtap", "the macvtap binding was removed from KubeVirt (v1.3)"},
		{iface.DeprecatedPasst != nil, "passt", "the passt binding was removed from KubeVirt (v1.3)"},
		{iface.PasstBinding != nil, "passtBinding", "the passt binding needs KubeVirt's pod network setup; use bridge or masquerade with a Layout that attaches them"},
		{iface.Binding != nil, "binding", "network binding plugins need a cluster's KubeVirt configuration"},
	}
	for _, r := range refused {
		if r.set {
			return field.Forbidden(path.Child(r.field), r.why)
		}
	}
	if iface.Bridge == nil && iface.Masquerade == nil && iface.SRIOV == nil {
		return field.Required(path.path(), "a binding method is required: bridge, masquerade or sriov")
	}
	return nil
}

// checkTag refuses a device tag where KubeVirt would honour it: with a
// cloudInitConfigDrive volume, KubeVirt writes each tagged device's guest
// address into the config drive's device metadata, which this library does
// not. Without a config drive KubeVirt ignores tags, and so does Convert.
func (c *converter) checkTag(path itemPath, tag string) error {
	if tag == "" {
		return nil
	}
	for _, v := range c.spec.Volumes {
		if v.CloudInitConfigDrive != nil {
			return field.Forbidden(path.Child("tag"), "device tags in the config drive's device metadata are not written")
		}
	}
	return nil
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
// state, virtio queues, alias ua-<name>.
func (c *converter) domainInterface(path itemPath, iface *v1.Interface, network *v1.Network, parts *interfaceParts) (libvirtxml.DomainInterface, error) {
	parts.alias.Name = c.text.join(UserAliasPrefix, iface.Name)
	nic := libvirtxml.DomainInterface{Alias: &parts.alias}

	model := iface.Model
	if model == "" {
		model = v1.VirtIO
	}
	if !slices.Contains(interfaceModels, model) {
		return nic, field.NotSupported(path.Child("model"), model, interfaceModels)
	}
	parts.model.Type = model
	if model == v1.VirtIO {
		parts.model.Type = c.virtioModel
		if q := c.networkQueues(); q > 0 {
			nic.Driver = &libvirtxml.DomainInterfaceDriver{Name: "vhost", Queues: q}
		}
	}
	nic.Model = &parts.model

	att, err := c.opts.Layout.Interface(c.vmi, iface, network)
	if err != nil {
		return nic, err
	}
	if err := attach(&nic, parts, att); err != nil {
		return nic, field.Invalid(path.path(), iface.Name, err.Error())
	}
	if att.Type == "user" && att.Backend == "passt" {
		nic.PortForward = passtPortForwards(iface.Ports)
	}

	if iface.MacAddress != "" {
		mac, ok := libvirtMAC(iface.MacAddress)
		if !ok {
			return nic, field.Invalid(path.Child("macAddress"), iface.MacAddress, "not a 6-byte MAC address such as de:ad:00:00:be:af")
		}
		parts.mac.Address = mac
		nic.MAC = &parts.mac
	}
	if iface.PciAddress != "" {
		addr, err := parsePCIAddress(iface.PciAddress)
		if err != nil {
			return nic, field.Invalid(path.Child("pciAddress"), iface.PciAddress, err.Error())
		}
		nic.Address = &libvirtxml.DomainAddress{PCI: addr}
	}
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
	switch iface.State {
	case "", v1.InterfaceStateLinkUp:
	case v1.InterfaceStateLinkDown:
		nic.Link = &libvirtxml.DomainInterfaceLink{State: "down"}
	default:
		return nic, field.NotSupported(path.Child("state"), string(iface.State),
			[]string{string(v1.InterfaceStateLinkUp), string(v1.InterfaceStateLinkDown), string(v1.InterfaceStateAbsent)})
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
	return min(c.vcpus(), maxNetworkQueues)
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

// uaAlias is KubeVirt's user alias of a device, "ua-<name>", for devices
// without parts of their own to hold it.
func (c *converter) uaAlias(name string) *libvirtxml.DomainAlias {
	return &libvirtxml.DomainAlias{Name: c.text.join(UserAliasPrefix, name)}
}
