package convert

import (
	"strconv"

	"libvirt.org/go/libvirtxml"
)

// guestAgentChannel is the virtio-serial port name the QEMU guest agent
// listens on.
const guestAgentChannel = "org.qemu.guest_agent.0"

// channels adds the guest agent's virtio-serial channel (a unix socket whose
// path libvirt picks), as KubeVirt does for every VMI, and a VSOCK device
// when spec.domain.devices.autoattachVSOCK is true. (Downward metrics,
// spec.domain.devices.downwardMetrics, are fed by KubeVirt's virt-handler
// and refused with the fields no area honours: refuse.go.)
func (c *converter) channels(d *libvirtxml.Domain) error {
	devs := &c.spec.Domain.Devices
	if switchedOn(devs.AutoattachVSOCK) {
		d.Devices.VSock = c.vsock()
	}
	p := c.parts
	p.agentSource.UNIX = &p.agentUNIX
	p.agentVirtIO.Name = guestAgentChannel
	p.agentTarget.VirtIO = &p.agentVirtIO
	p.channels[0] = libvirtxml.DomainChannel{Source: &p.agentSource, Target: &p.agentTarget}
	d.Devices.Channels = p.channels[:]
	return nil
}

// vsock is the VSOCK device: always virtio 1.0 (vhost-vsock-pci has no
// transitional form), with the context id KubeVirt's controller allocated
// (status.vsockCID) when the VMI carries one, else one libvirt picks.
func (c *converter) vsock() *libvirtxml.DomainVSock {
	cid := &libvirtxml.DomainVSockCID{Auto: "yes"}
	if id := c.vmi.Status.VSOCKCID; id != nil {
		cid = &libvirtxml.DomainVSockCID{Auto: "no", Address: strconv.FormatUint(uint64(*id), 10)}
	}
	return &libvirtxml.DomainVSock{Model: "virtio-non-transitional", CID: cid}
}
