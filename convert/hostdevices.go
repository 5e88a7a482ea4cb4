package convert

import (
	"fmt"
	"net"
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/internal/pciaddr"
)

// Alias prefixes of host devices, as KubeVirt names them: the alias of a
// device-plugin GPU "gpu1" is "ua-gpu-gpu1".
const (
	aliasPrefixHostDevice    = "hostdevice-"
	aliasPrefixDRAHostDevice = "dra-hostdevice-"
	aliasPrefixGPU           = "gpu-"
	aliasPrefixDRAGPU        = "dra-gpu-"
	aliasPrefixSRIOV         = "sriov-"
)

// hostDevKind is the kind of host device an Options.HostDevices entry names.
type hostDevKind int

const (
	hostDevPCI hostDevKind = iota
	hostDevMdev
	hostDevUSB
)

// hostDevices hands the VMI's host devices, GPUs and SR-IOV interfaces to
// the guest, in KubeVirt's order: generic host devices (PCI, then mediated;
// DRA ones after), GPUs (PCI, then mediated; DRA ones after), then
// SR-IOV interfaces (an SR-IOV interface with a MAC address becomes an
// <interface type="hostdev"> instead, so that libvirt sets the VF's MAC).
// Each needs an entry in Options.HostDevices under its
// name; without one it is refused with an error naming the spec field.
func (c *converter) hostDevices(d *libvirtxml.Domain) error {
	devs := &c.spec.Domain.Devices
	if len(devs.HostDevices) == 0 && len(devs.GPUs) == 0 && !c.hasSRIOVInterface() {
		return nil
	}

	var probs problems
	// spec.domain.devices.hostDevices
	var generic, genericDRA [2][]libvirtxml.DomainHostdev
	for i, hd := range devs.HostDevices {
		path := hostDevicesPath.Index(i)
		if err := c.checkTag(itemPath{hostDevicesPath, i}, hd.Tag); err != nil {
			if err := probs.add(err); err != nil {
				return err
			}
			continue
		}
		dra := hd.DeviceName == "" && hd.ClaimRequest != nil
		hostDev, kind, err := c.lookupHostDevice(path, hd.Name, dra, hostDevPCI, hostDevMdev, hostDevUSB)
		if err != nil {
			if err := probs.add(err); err != nil {
				return err
			}
			continue
		}
		if kind == hostDevUSB {
			// libvirtxml writes <product> before <vendor>, an order libvirt's
			// schema refuses; the host bus and device numbers would do, but
			// Options has no field for them yet.
			probs.add(field.Invalid(path, hd.Name, fmt.Sprintf("Options.HostDevices[%q] gives a USB vendor and product; USB host devices are not supported yet (libvirtxml writes them in an order libvirt's schema refuses)", hd.Name)))
			continue
		}
		prefix := aliasPrefixHostDevice
		if dra {
			prefix = aliasPrefixDRAHostDevice
		}
		alias := c.hostDeviceAlias(prefix, hd.Name)
		dev := pciHostdev(hostDev, alias)
		if kind == hostDevMdev {
			dev = mdevHostdev(hostDev, alias)
		}
		if dra {
			genericDRA[kind] = append(genericDRA[kind], dev)
		} else {
			generic[kind] = append(generic[kind], dev)
		}
	}

	// spec.domain.devices.gpus
	gpus, err := c.gpuHostdevs(devs.GPUs)
	if err := probs.add(err); err != nil {
		return err
	}

	// SR-IOV interfaces (checked by the interfaces area already).
	var sriov []libvirtxml.DomainHostdev
	for i := range devs.Interfaces {
		iface := &devs.Interfaces[i]
		if iface.SRIOV == nil || iface.State == v1.InterfaceStateAbsent {
			continue
		}
		dev, err := c.sriovHostdev(i, iface)
		if err != nil {
			if err := probs.add(err); err != nil {
				return err
			}
			continue
		}
		if iface.MacAddress != "" {
			nic, err := sriovInterface(i, iface, dev)
			if err != nil {
				if err := probs.add(err); err != nil {
					return err
				}
				continue
			}
			d.Devices.Interfaces = append(d.Devices.Interfaces, nic)
			continue
		}
		sriov = append(sriov, dev)
	}

	for _, group := range [][]libvirtxml.DomainHostdev{
		generic[hostDevPCI], generic[hostDevMdev],
		genericDRA[hostDevPCI], genericDRA[hostDevMdev],
		gpus, sriov,
	} {
		d.Devices.Hostdevs = append(d.Devices.Hostdevs, group...)
	}
	return probs.err()
}

// hasSRIOVInterface tells whether an interface of the VMI is SR-IOV.
func (c *converter) hasSRIOVInterface() bool {
	for i := range c.spec.Domain.Devices.Interfaces {
		if c.spec.Domain.Devices.Interfaces[i].SRIOV != nil {
			return true
		}
	}
	return false
}

// gpuHostdevs converts spec.domain.devices.gpus: PCI passthrough GPUs and
// mediated vGPUs. As in KubeVirt, the first vGPU gets a display and a boot
// framebuffer when no GPU says anything about displays.
func (c *converter) gpuHostdevs(gpus []v1.GPU) ([]libvirtxml.DomainHostdev, error) {
	var pci, mdev, draPCI, draMdev []libvirtxml.DomainHostdev
	var probs problems
	displaySet := false
	for i, gpu := range gpus {
		path := gpusPath.Index(i)
		if err := c.checkTag(itemPath{gpusPath, i}, gpu.Tag); err != nil {
			if err := probs.add(err); err != nil {
				return nil, err
			}
			continue
		}
		dra := gpu.DeviceName == "" && gpu.ClaimRequest != nil
		hostDev, kind, err := c.lookupHostDevice(path, gpu.Name, dra, hostDevPCI, hostDevMdev)
		if err != nil {
			if err := probs.add(err); err != nil {
				return nil, err
			}
			continue
		}
		prefix := aliasPrefixGPU
		if dra {
			prefix = aliasPrefixDRAGPU
		}
		var display *v1.VGPUDisplayOptions
		if o := gpu.VirtualGPUOptions; o != nil && o.Display != nil {
			display = o.Display
			displaySet = true
		}
		switch kind {
		case hostDevPCI:
			dev := pciHostdev(hostDev, c.hostDeviceAlias(prefix, gpu.Name))
			// KubeVirt turns the display of a PCI GPU on only when asked
			// explicitly; libvirt 9.0's schema has no display on PCI
			// host devices, so such a request cannot be honoured.
			if display != nil && display.Enabled != nil && *display.Enabled {
				return nil, field.Forbidden(path.Child("virtualGPUOptions", "display", "enabled"),
					"a display on a PCI passthrough GPU is not supported; only mediated devices (mdevUUID) have one")
			}
			if dra {
				draPCI = append(draPCI, dev)
			} else {
				pci = append(pci, dev)
			}
		case hostDevMdev:
			dev := mdevHostdev(hostDev, c.hostDeviceAlias(prefix, gpu.Name))
			if display != nil && (display.Enabled == nil || *display.Enabled) {
				dev.SubsysMDev.Display = "on"
				if display.RamFB == nil || display.RamFB.Enabled == nil || *display.RamFB.Enabled {
					dev.SubsysMDev.RamFB = "on"
				}
			}
			if dra {
				draMdev = append(draMdev, dev)
			} else {
				mdev = append(mdev, dev)
			}
		}
	}
	// KubeVirt's default display: on the first vGPU of each source.
	if !displaySet {
		for _, group := range [][]libvirtxml.DomainHostdev{mdev, draMdev} {
			if len(group) > 0 {
				group[0].SubsysMDev.Display = "on"
				group[0].SubsysMDev.RamFB = "on"
			}
		}
	}
	var out []libvirtxml.DomainHostdev
	for _, group := range [][]libvirtxml.DomainHostdev{pci, mdev, draPCI, draMdev} {
		out = append(out, group...)
	}
	return out, probs.err()
}

// sriovHostdev passes the VF named by Options.HostDevices[iface.Name] to the
// guest, at the interface's guest PCI address and boot order.
func (c *converter) sriovHostdev(i int, iface *v1.Interface) (libvirtxml.DomainHostdev, error) {
	path := interfacesPath.Index(i)
	hostDev, _, err := c.lookupHostDevice(path.Child("sriov"), iface.Name, false, hostDevPCI)
	if err != nil {
		return libvirtxml.DomainHostdev{}, err
	}
	dev := pciHostdev(hostDev, c.hostDeviceAlias(aliasPrefixSRIOV, iface.Name))
	if iface.PciAddress != "" {
		addr, err := parsePCIAddress(iface.PciAddress)
		if err != nil {
			return libvirtxml.DomainHostdev{}, field.Invalid(path.Child("pciAddress"), iface.PciAddress, err.Error())
		}
		dev.Address = &libvirtxml.DomainAddress{PCI: addr}
	}
	if iface.BootOrder != nil {
		dev.Boot = &libvirtxml.DomainDeviceBoot{Order: *iface.BootOrder}
	}
	return dev, nil
}

// sriovInterface turns the host device of an SR-IOV interface with a MAC
// address into an <interface type="hostdev">: the same VF in the guest, with
// libvirt setting the VF's MAC through its physical function, as KubeVirt's
// SR-IOV CNI does on a node.
func sriovInterface(i int, iface *v1.Interface, dev libvirtxml.DomainHostdev) (libvirtxml.DomainInterface, error) {
	mac, err := net.ParseMAC(iface.MacAddress)
	if err != nil || len(mac) != 6 {
		return libvirtxml.DomainInterface{}, field.Invalid(devicesPath.Child("interfaces").Index(i).Child("macAddress"),
			iface.MacAddress, "not a 6-byte MAC address such as de:ad:00:00:be:af")
	}
	return libvirtxml.DomainInterface{
		Managed: "no",
		MAC:     &libvirtxml.DomainInterfaceMAC{Address: mac.String()},
		Source: &libvirtxml.DomainInterfaceSource{
			Hostdev: &libvirtxml.DomainInterfaceSourceHostdev{PCI: dev.SubsysPCI.Source},
		},
		Boot:    dev.Boot,
		Alias:   dev.Alias,
		Address: dev.Address,
	}, nil
}

// hostDevKindNames name the kinds in error messages.
var hostDevKindNames = map[hostDevKind]string{
	hostDevPCI:  "a PCI address",
	hostDevMdev: "a mediated device uuid",
	hostDevUSB:  "a USB vendor and product",
}

// lookupHostDevice finds the Options.HostDevices entry of a named device and
// tells which kind it is; path names the VMI field for errors, dra tells
// whether the VMI asks for the device through a resource claim, and allowed
// lists the kinds this device may be.
func (c *converter) lookupHostDevice(path *field.Path, name string, dra bool, allowed ...hostDevKind) (HostDevice, hostDevKind, error) {
	hostDev, ok := c.opts.HostDevices[name]
	if !ok {
		what := "a device plugin"
		if dra {
			what = "a resource claim (DRA)"
		}
		return HostDevice{}, 0, field.Invalid(path, name,
			fmt.Sprintf("host device allocated by %s is not available without a cluster; Options.HostDevices[%q] must give its host address", what, name))
	}
	var kinds []hostDevKind
	if hostDev.PCIAddress != "" {
		kinds = append(kinds, hostDevPCI)
	}
	if hostDev.MdevUUID != "" {
		kinds = append(kinds, hostDevMdev)
	}
	if hostDev.USBVendor != "" || hostDev.USBProduct != "" {
		kinds = append(kinds, hostDevUSB)
	}
	if len(kinds) != 1 {
		return HostDevice{}, 0, field.Invalid(path, name,
			fmt.Sprintf("Options.HostDevices[%q] must set exactly one of PCIAddress, MdevUUID or USBVendor and USBProduct", name))
	}
	kind := kinds[0]
	valid := false
	var want []string
	for _, k := range allowed {
		valid = valid || k == kind
		want = append(want, hostDevKindNames[k])
	}
	if !valid {
		return HostDevice{}, 0, field.Invalid(path, name,
			fmt.Sprintf("Options.HostDevices[%q] gives %s; this device needs %s", name, hostDevKindNames[kind], joinOr(want)))
	}
	var err error
	switch kind {
	case hostDevPCI:
		_, err = parsePCIAddress(hostDev.PCIAddress)
	case hostDevMdev:
		if !mdevUUIDPattern.MatchString(hostDev.MdevUUID) {
			err = fmt.Errorf("MdevUUID %q is not a uuid", hostDev.MdevUUID)
		}
	case hostDevUSB:
		if !usbIDPattern.MatchString(hostDev.USBVendor) || !usbIDPattern.MatchString(hostDev.USBProduct) {
			err = fmt.Errorf("USBVendor and USBProduct must both be 4-digit hex ids such as 0x46f4, got %q and %q", hostDev.USBVendor, hostDev.USBProduct)
		}
	}
	if err != nil {
		return HostDevice{}, 0, field.Invalid(path, name, fmt.Sprintf("Options.HostDevices[%q]: %v", name, err))
	}
	return hostDev, kind, nil
}

// joinOr joins alternatives with ", " and a final " or ".
func joinOr(s []string) string {
	out := ""
	for i, x := range s {
		switch {
		case i == 0:
		case i == len(s)-1:
			out += " or "
		default:
			out += ", "
		}
		out += x
	}
	return out
}

var (
	mdevUUIDPattern = regexp.MustCompile(`^[\da-fA-F]{8}-[\da-fA-F]{4}-[\da-fA-F]{4}-[\da-fA-F]{4}-[\da-fA-F]{12}$`)
	usbIDPattern    = regexp.MustCompile(`^0x[\da-fA-F]{4}$`)
)

// parsePCIAddress reads a PCI address "0000:81:01.0" (domain:bus:slot.function,
// in hex) into a libvirt PCI address.
func parsePCIAddress(s string) (*libvirtxml.DomainAddressPCI, error) {
	a, ok := pciaddr.Parse(s)
	if !ok {
		return nil, fmt.Errorf("not a PCI address of the form dddd:bb:ss.f")
	}
	return &libvirtxml.DomainAddressPCI{Domain: &a.Domain, Bus: &a.Bus, Slot: &a.Slot, Function: &a.Function}, nil
}

// hostDeviceAlias is the alias of a host device: "ua-<prefix><name>".
func (c *converter) hostDeviceAlias(prefix, name string) *libvirtxml.DomainAlias {
	return &libvirtxml.DomainAlias{Name: c.text.join(UserAliasPrefix, prefix, name)}
}

// pciHostdev is a PCI device passed through with vfio, which the host has
// already bound (managed="no", as in KubeVirt).
func pciHostdev(hd HostDevice, alias *libvirtxml.DomainAlias) libvirtxml.DomainHostdev {
	addr, _ := parsePCIAddress(hd.PCIAddress) // checked by lookupHostDevice
	return libvirtxml.DomainHostdev{
		Managed: "no",
		SubsysPCI: &libvirtxml.DomainHostdevSubsysPCI{
			Source: &libvirtxml.DomainHostdevSubsysPCISource{Address: addr},
		},
		Alias: alias,
	}
}

// mdevHostdev is a mediated device (a vGPU) given to the guest as vfio-pci.
func mdevHostdev(hd HostDevice, alias *libvirtxml.DomainAlias) libvirtxml.DomainHostdev {
	return libvirtxml.DomainHostdev{
		SubsysMDev: &libvirtxml.DomainHostdevSubsysMDev{
			Model: "vfio-pci",
			Source: &libvirtxml.DomainHostdevSubsysMDevSource{
				Address: &libvirtxml.DomainAddressMDev{UUID: hd.MdevUUID},
			},
		},
		Alias: alias,
	}
}
