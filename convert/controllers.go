package convert

import (
	"strings"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// controllers writes the domain's controllers as KubeVirt does, in its
// order: the USB controller (model none unless something needs USB), the
// virtio-scsi controller (unless hotplug is off and no disk is on SCSI), a
// pcie-root without 64-bit PCI hole when the VMI's annotation
// kubevirt.io/disablePCIHole64 is "true", and the virtio-serial controller
// when the serial console is auto-attached.
func (c *converter) controllers(d *libvirtxml.Domain) error {
	devs := &c.spec.Domain.Devices
	p := c.parts
	list := p.controllers[:0] // room for three; a fourth moves the list
	usb := "none"
	if c.needsUSB() {
		usb = "qemu-xhci"
	}
	list = append(list, libvirtxml.DomainController{Type: "usb", Model: usb})

	if c.needsSCSIController() {
		list = append(list, libvirtxml.DomainController{Type: "scsi", Model: c.facts.virtioModel, Driver: c.withIOMMU(c.scsiControllerDriver())})
	}

	if strings.EqualFold(c.vmi.Annotations[v1.DisablePCIHole64], "true") {
		list = append(list, libvirtxml.DomainController{Type: "pci", Model: "pcie-root", PCI: &libvirtxml.DomainControllerPCI{
			Hole64: &libvirtxml.DomainControllerPCIHole64{Size: 0, Unit: "KiB"},
		}})
	}

	if !switchedOff(devs.AutoattachSerialConsole) {
		list = append(list, libvirtxml.DomainController{Type: "virtio-serial", Model: c.facts.virtioModel, Driver: c.withIOMMU(nil)})
	}
	// Every controller has index 0, each in a field of its own.
	indexes := p.controllerIndex[:]
	if len(list) > len(indexes) {
		indexes = make([]uint, len(list))
	}
	for i := range list {
		list[i].Index = &indexes[i]
	}
	d.Devices.Controllers = list
	return nil
}

// withIOMMU returns a virtio controller's driver d with iommu="on" for a
// SEV guest (facts.iommu): d itself otherwise, or a new driver when d is
// nil.
func (c *converter) withIOMMU(d *libvirtxml.DomainControllerDriver) *libvirtxml.DomainControllerDriver {
	if !c.facts.iommu {
		return d
	}
	if d == nil {
		d = new(libvirtxml.DomainControllerDriver)
	}
	d.IOMMU = "on"
	return d
}

// needsUSB tells whether the guest needs a USB controller: for a USB input
// (inputs on the default bus are), USB redirection, or a disk, LUN or
// CD-ROM on the USB bus. KubeVirt looks only at plain disks on USB; a USB
// CD-ROM or LUN without a controller would not start, so they count here
// too. (USB host devices are refused for now.)
func (c *converter) needsUSB() bool {
	devs := &c.spec.Domain.Devices
	if devs.ClientPassthrough != nil {
		return true
	}
	for i := range devs.Inputs {
		if inputBus(&devs.Inputs[i]) == v1.InputBusUSB {
			return true
		}
	}
	for i := range devs.Disks {
		if diskBus(&devs.Disks[i]) == v1.DiskBusUSB {
			return true
		}
	}
	return false
}

// needsSCSIController tells whether the VMI gets KubeVirt's virtio-scsi
// controller: always while disk hotplug is on, otherwise only for SCSI disks.
func (c *converter) needsSCSIController() bool {
	devs := &c.spec.Domain.Devices
	if !devs.DisableHotplug {
		return true
	}
	for i := range devs.Disks {
		if diskBus(&devs.Disks[i]) == v1.DiskBusSCSI {
			return true
		}
	}
	return false
}

// scsiControllerDriver gives the SCSI controller an IO thread and one queue
// per vCPU when a SCSI disk asks for a dedicated IO thread and the VMI has
// shared IO threads: the thread is the shared one that follows the virtio
// disks' round-robin, as KubeVirt's converter picks it. (KubeVirt's
// admission, and api.Validate, refuse a dedicated IO thread on SCSI: only
// a VMI converted without validation gets here.)
func (c *converter) scsiControllerDriver() *libvirtxml.DomainControllerDriver {
	disks := c.spec.Domain.Devices.Disks
	wanted := false
	for i := range disks {
		if diskBus(&disks[i]) == v1.DiskBusSCSI && hasDedicatedIOThread(&disks[i]) {
			wanted = true
		}
	}
	plan := c.facts.ioThreads
	if !wanted || plan.shared == 0 {
		return nil
	}
	thread := uint(1)
	for i := range disks {
		if diskBus(&disks[i]) == v1.DiskBusVirtio && !hasDedicatedIOThread(&disks[i]) {
			thread = thread%plan.shared + 1
		}
	}
	queues := c.facts.topology.count()
	return &libvirtxml.DomainControllerDriver{IOThread: thread, Queues: &queues}
}
