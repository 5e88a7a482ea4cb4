package convert

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// rootComplexReserved are the slots of the root bus that devices placed on
// it skip: 0 (the host bridge), 1 (VGA), 0x1b (the first ICH9 sound card)
// and 0x1f (QEMU's SATA controller).
var rootComplexReserved = map[uint]bool{0: true, 1: true, 0x1b: true, 0x1f: true}

// rootComplexSlots is the number of slots on a PCI bus.
const rootComplexSlots = 0x20

// rootComplex honours the kubevirt.io/placePCIDevicesOnRootComplex
// annotation: when it is "true", every PCI device that has no address of
// its own is put on the root bus (bus 0, function 0), one slot after the
// other from slot 2, as KubeVirt does — interfaces, PCI host devices,
// controllers, virtio disks, virtio inputs, watchdogs, RNGs and the balloon,
// in that order. Devices with an explicit PCI address keep it, and the
// placement skips the root-bus slots they hold (KubeVirt's does not, and
// gives libvirt a slot used twice, which it refuses); devices with an
// address of another kind (drive, USB…) are left alone. A VMI with more
// devices than the root bus has free slots is refused.
func (c *converter) rootComplex(d *libvirtxml.Domain) error {
	if c.vmi.Annotations[v1.PlacePCIDevicesOnRootComplex] != "true" {
		return nil
	}
	p := annotationsPath.Key(v1.PlacePCIDevicesOnRootComplex)
	last := uint(0)
	var taken [rootComplexSlots]bool
	place := func(a **libvirtxml.DomainAddress) error {
		if *a != nil && ((*a).PCI == nil || (*a).PCI.Domain != nil) {
			return nil
		}
		slot := last + 1
		for slot < rootComplexSlots && (rootComplexReserved[slot] || taken[slot]) {
			slot++
		}
		if slot >= rootComplexSlots {
			return field.Invalid(p, "true", "the VMI has more PCI devices than the root bus has free slots")
		}
		last = slot
		zero, s := uint(0), slot
		*a = &libvirtxml.DomainAddress{PCI: &libvirtxml.DomainAddressPCI{Domain: &zero, Bus: &zero, Slot: &s, Function: new(uint)}}
		return nil
	}
	devs := d.Devices
	var addrs []**libvirtxml.DomainAddress
	for i := range devs.Interfaces {
		addrs = append(addrs, &devs.Interfaces[i].Address)
	}
	for i := range devs.Hostdevs {
		if devs.Hostdevs[i].SubsysPCI != nil {
			addrs = append(addrs, &devs.Hostdevs[i].Address)
		}
	}
	for i := range devs.Controllers {
		switch devs.Controllers[i].Model {
		case "pci-root", "pcie-root", "pcie-expander-bus":
			continue
		}
		addrs = append(addrs, &devs.Controllers[i].Address)
	}
	for i := range devs.Disks {
		if t := devs.Disks[i].Target; t != nil && t.Bus == string(v1.DiskBusVirtio) {
			addrs = append(addrs, &devs.Disks[i].Address)
		}
	}
	for i := range devs.Inputs {
		if devs.Inputs[i].Bus == string(v1.InputBusVirtio) {
			addrs = append(addrs, &devs.Inputs[i].Address)
		}
	}
	for i := range devs.Watchdogs {
		addrs = append(addrs, &devs.Watchdogs[i].Address)
	}
	for i := range devs.RNGs {
		addrs = append(addrs, &devs.RNGs[i].Address)
	}
	if devs.MemBalloon != nil {
		addrs = append(addrs, &devs.MemBalloon.Address)
	}
	for _, a := range addrs {
		if pci := explicitRootSlot(*a); pci != nil {
			taken[*pci] = true
		}
	}
	for _, a := range addrs {
		if err := place(a); err != nil {
			return err
		}
	}
	return nil
}

// explicitRootSlot is the root-bus slot of a device's own PCI address
// (domain 0, bus 0), or nil.
func explicitRootSlot(a *libvirtxml.DomainAddress) *uint {
	if a == nil || a.PCI == nil || a.PCI.Domain == nil {
		return nil
	}
	pci := a.PCI
	if *pci.Domain != 0 || pci.Bus == nil || *pci.Bus != 0 || pci.Slot == nil || *pci.Slot >= rootComplexSlots {
		return nil
	}
	return pci.Slot
}
