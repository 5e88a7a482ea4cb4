package convert

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	"libvirt.org/go/libvirtxml"
)

// guestAgentChannel is the virtio-serial port name the QEMU guest agent
// listens on.
const guestAgentChannel = "org.qemu.guest_agent.0"

// channels adds the guest agent's virtio-serial channel (a unix socket whose
// path libvirt picks), as KubeVirt does for every VMI. Downward metrics
// (spec.domain.devices.downwardMetrics) and VSOCK
// (spec.domain.devices.autoattachVSOCK) are refused: the first is fed by
// KubeVirt's virt-handler, the second needs a context id that KubeVirt's
// controller allocates cluster-wide.
func (c *converter) channels(d *libvirtxml.Domain) error {
	devs := &c.spec.Domain.Devices
	if devs.DownwardMetrics != nil {
		return field.Forbidden(devicesPath.Child("downwardMetrics"),
			"downward metrics are served by KubeVirt's virt-handler, which is not available")
	}
	if switchedOn(devs.AutoattachVSOCK) {
		return field.Forbidden(devicesPath.Child("autoattachVSOCK"),
			"a VSOCK device needs a context id allocated by KubeVirt's controller, which is not available")
	}
	d.Devices.Channels = append(d.Devices.Channels, libvirtxml.DomainChannel{
		Source: &libvirtxml.DomainChardevSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{}},
		Target: &libvirtxml.DomainChannelTarget{
			VirtIO: &libvirtxml.DomainChannelTargetVirtIO{Name: guestAgentChannel},
		},
	})
	return nil
}
