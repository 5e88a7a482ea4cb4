package convert

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// hostDevices hands the VMI's host devices, GPUs and SR-IOV interfaces to
// the guest, in KubeVirt's order: generic host devices (PCI, then mediated;
// DRA ones after), GPUs (PCI, then mediated; DRA ones after), then SR-IOV
// interfaces without a MAC address (the interfaces area makes those with
// one an <interface type="hostdev">). Each needs an entry in
// Options.HostDevices under its name; without one it is refused with an
// error naming the spec field.
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
		dra := hd.DeviceName == "" && hd.ClaimRequest != nil
		hostDev, kind, err := c.opts.hostDevice(path, hd.Name, dra, hostDevPCI, hostDevMdev, hostDevUSB)
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

	// SR-IOV interfaces without a MAC address.
	var sriov []libvirtxml.DomainHostdev
	for i := range devs.Interfaces {
		iface := &devs.Interfaces[i]
		if iface.SRIOV == nil || iface.MacAddress != "" || iface.State == v1.InterfaceStateAbsent {
			continue
		}
		dev, err := c.sriovHostdev(i, iface)
		if err != nil {
			if err := probs.add(err); err != nil {
				return err
			}
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
// framebuffer when no GPU says anything about displays — unless
// autoattachGraphicsDevice is false: libvirt needs a graphics device for
// a vGPU display, so the default display is left off then (KubeVirt
// writes it, and libvirt refuses the domain), and a display asked for is
// refused.
func (c *converter) gpuHostdevs(gpus []v1.GPU) ([]libvirtxml.DomainHostdev, error) {
	var pci, mdev, draPCI, draMdev []libvirtxml.DomainHostdev
	var probs problems
	displaySet := false
	noGraphics := switchedOff(c.spec.Domain.Devices.AutoattachGraphicsDevice)
	for i, gpu := range gpus {
		path := gpusPath.Index(i)
		dra := gpu.DeviceName == "" && gpu.ClaimRequest != nil
		hostDev, kind, err := c.opts.hostDevice(path, gpu.Name, dra, hostDevPCI, hostDevMdev)
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
				if noGraphics {
					return nil, field.Forbidden(path.Child("virtualGPUOptions", "display", "enabled"),
						"a vGPU display needs a graphics device, which "+devicesPath.Child("autoattachGraphicsDevice").String()+": false leaves out")
				}
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
	if !displaySet && !noGraphics {
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
	hostDev, _, err := c.opts.hostDevice(interfacesPath.Index(i).Child("sriov"), iface.Name, false, hostDevPCI)
	if err != nil {
		return libvirtxml.DomainHostdev{}, err
	}
	dev := pciHostdev(hostDev, c.hostDeviceAlias(aliasPrefixSRIOV, iface.Name))
	dev.Address = guestPCIAddress(iface.PciAddress)
	if iface.BootOrder != nil {
		dev.Boot = &libvirtxml.DomainDeviceBoot{Order: *iface.BootOrder}
	}
	return dev, nil
}

// pciHostdev is a PCI device passed through with vfio, which the host has
// already bound (managed="no", as in KubeVirt).
func pciHostdev(hd HostDevice, alias *libvirtxml.DomainAlias) libvirtxml.DomainHostdev {
	addr, _ := parsePCIAddress(hd.PCIAddress) // checked by Options.hostDevice
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
