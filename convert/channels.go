package convert

import (
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"libvirt.org/go/libvirtxml"
)

// guestAgentChannel is the virtio-serial port name the QEMU guest agent
// listens on.
const guestAgentChannel = "org.qemu.guest_agent.0"

// DownwardMetricsChannel is the virtio-serial port name of the downward
// metrics channel, as KubeVirt names it (vhostmd's): the guest's
// vm-dump-metrics reads /dev/virtio-ports/org.github.vhostmd.1.
const DownwardMetricsChannel = "org.github.vhostmd.1"

// channels adds the guest agent's virtio-serial channel (a unix socket whose
// path libvirt picks), as KubeVirt does for every VMI; the downward metrics
// channel when spec.domain.devices.downwardMetrics is set (a unix socket
// QEMU listens on, at the layout's Paths.DownwardMetricsSocket; the host
// side connects to it and answers the guest's requests, as virt-handler
// does: the launcher); and a VSOCK device when
// spec.domain.devices.autoattachVSOCK is true.
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
	if devs.DownwardMetrics != nil {
		if c.paths.DownwardMetricsSocket == "" {
			return field.Forbidden(devicesPath.Child("downwardMetrics"), "the layout names no socket for the downward metrics channel")
		}
		d.Devices.Channels = append(d.Devices.Channels, libvirtxml.DomainChannel{
			Source: &libvirtxml.DomainChardevSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{Mode: "bind", Path: c.paths.DownwardMetricsSocket}},
			Target: &libvirtxml.DomainChannelTarget{VirtIO: &libvirtxml.DomainChannelTargetVirtIO{Name: DownwardMetricsChannel}},
		})
	}
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
