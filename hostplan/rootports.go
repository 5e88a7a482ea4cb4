package hostplan

import (
	"strings"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// Spare PCIe root ports, as KubeVirt's virt-launcher reserves them when it
// defines a domain (its converter does not: the domain manager adds them),
// so that virtio disks and NICs can be hot-plugged later: a q35 guest
// plugs a PCIe device only into an empty root port. KubeVirt keeps a total
// of 8 ports with at least 3 free (16 with at least 6 above 2 GiB of
// memory), counting the devices that take a PCI address as its
// CountPCIDevices does. It reads back libvirt's placement to append the
// spare ports after the occupied ones; a plan reads nothing of the host,
// so it declares the occupied ports and the spare ones at once: libvirt
// fills root ports that a domain declares before it adds any, and the
// ports beyond the devices stay empty.
const (
	rootPortsTotal          = 8
	rootPortsFree           = 3
	rootPortsLargeTotal     = 16
	rootPortsLargeFree      = 6
	rootPortsLargeThreshold = 2 << 30 // bytes of guest memory
	// rootPortsMaxIndex is the highest controller index a root port
	// takes: each takes a slot of the root bus, which has 32.
	rootPortsMaxIndex = 31
)

// reserveRootPorts adds the spare PCIe root ports KubeVirt reserves to a
// q35 domain of v, unless it places PCI devices on the root complex,
// turns hotplug off, or declares PCI controllers of its own (NUMA
// passthrough's expander buses: their indices are the converter's).
func reserveRootPorts(d *libvirtxml.Domain, v *v1.VirtualMachineInstance) {
	if !pcieHotplug(d, v) {
		return
	}
	used := countPCIDevices(d.Devices)
	total, free := rootPortsTotal, rootPortsFree
	if d.Memory != nil && uint64(kib(d.Memory.Value, d.Memory.Unit))*1024 > rootPortsLargeThreshold {
		total, free = rootPortsLargeTotal, rootPortsLargeFree
	}
	ports := used + max(total-used, free)
	for i := 1; i <= ports && i <= rootPortsMaxIndex; i++ {
		index := uint(i)
		d.Devices.Controllers = append(d.Devices.Controllers, libvirtxml.DomainController{Type: "pci", Index: &index, Model: "pcie-root-port"})
	}
}

// pcieHotplug tells whether spare root ports are reserved for d.
func pcieHotplug(d *libvirtxml.Domain, v *v1.VirtualMachineInstance) bool {
	if d.Devices == nil || d.OS == nil || d.OS.Type == nil || !strings.Contains(d.OS.Type.Machine, "q35") {
		return false
	}
	if v.Annotations[v1.PlacePCIDevicesOnRootComplex] == "true" || v.Spec.Domain.Devices.DisableHotplug {
		return false
	}
	for _, c := range d.Devices.Controllers {
		if c.Type == "pci" && c.Model != "pcie-root" {
			return false
		}
	}
	return true
}

// countPCIDevices counts the devices that take a PCI address, as
// KubeVirt's CountPCIDevices does: interfaces, PCI host devices,
// controllers other than the root and expander buses, virtio disks and
// inputs, watchdogs, RNGs and the balloon.
func countPCIDevices(devs *libvirtxml.DomainDeviceList) int {
	n := len(devs.Interfaces) + len(devs.Watchdogs) + len(devs.RNGs)
	for _, h := range devs.Hostdevs {
		if h.SubsysPCI != nil {
			n++
		}
	}
	for _, c := range devs.Controllers {
		switch c.Model {
		case "pci-root", "pcie-root", "pcie-expander-bus":
		default:
			n++
		}
	}
	for _, d := range devs.Disks {
		if d.Target != nil && d.Target.Bus == string(v1.DiskBusVirtio) {
			n++
		}
	}
	for _, i := range devs.Inputs {
		if i.Bus == string(v1.InputBusVirtio) {
			n++
		}
	}
	if devs.MemBalloon != nil && devs.MemBalloon.Model != "none" {
		n++
	}
	return n
}
