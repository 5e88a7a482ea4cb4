package api

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/internal/pciaddr"
)

// validatePCIAddresses is this library's own rule for the guest PCI
// addresses a VMI sets (disks[].disk.pciAddress and
// interfaces[].pciAddress; the disks and interfaces families check their
// syntax). KubeVirt lets through what libvirt or QEMU then refuse: a PCI
// domain other than 0, a slot above 0x1f, slot 0 or 0x1f of bus 0 (q35's
// host bridge, and its ICH9 LPC, SATA and SMBus functions) and an address
// used twice.
func validatePCIAddresses(vmi *v1.VirtualMachineInstance) field.ErrorList {
	var errs field.ErrorList
	first := map[pciaddr.Address]*field.Path{}
	check := func(p *field.Path, s string) {
		a, ok := pciaddr.Parse(s)
		if !ok {
			return
		}
		switch {
		case a.Domain != 0:
			errs = append(errs, field.Invalid(p, s, "only PCI domain 0000 exists in the guest"))
		case a.Slot > 0x1f:
			errs = append(errs, field.Invalid(p, s, "the slot must be at most 1f"))
		case a.Bus == 0 && (a.Slot == 0 || a.Slot == 0x1f):
			errs = append(errs, field.Invalid(p, s, "slots 00 and 1f of bus 00 belong to the q35 chipset"))
		default:
			if prev, dup := first[a]; dup {
				errs = append(errs, field.Duplicate(p, fmt.Sprintf("%s (also %s)", s, prev)))
			} else {
				first[a] = p
			}
		}
	}
	for i, d := range vmi.Spec.Domain.Devices.Disks {
		if d.Disk != nil && d.Disk.PciAddress != "" {
			check(disksPath.Index(i).Child("disk", "pciAddress"), d.Disk.PciAddress)
		}
	}
	for i, iface := range vmi.Spec.Domain.Devices.Interfaces {
		if iface.PciAddress != "" {
			check(ifacesPath.Index(i).Child("pciAddress"), iface.PciAddress)
		}
	}
	return errs
}
