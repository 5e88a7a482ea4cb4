package convert

import (
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// balloon adds the memory balloon: the virtio model with statistics every
// Options.MemBalloonStatsPeriod seconds and free page reporting by KubeVirt's
// rule (Options.FreePageReporting, unless the VMI is high-performance —
// dedicated CPUs, realtime or hugepages — or has the
// kubevirt.io/free-page-reporting-disabled annotation set to "true").
// autoattachMemBalloon false gives the model "none": no balloon at all.
func (c *converter) balloon(d *libvirtxml.Domain) error {
	if switchedOff(c.spec.Domain.Devices.AutoattachMemBalloon) {
		d.Devices.MemBalloon = &libvirtxml.DomainMemBalloon{Model: "none"}
		return nil
	}
	b := &c.parts.memBalloon
	*b = libvirtxml.DomainMemBalloon{Model: c.facts.virtioModel, FreePageReporting: "off"}
	if p := c.opts.MemBalloonStatsPeriod; p != 0 {
		c.parts.memBalloonStats.Period = p
		b.Stats = &c.parts.memBalloonStats
	}
	if c.opts.FreePageReporting && !c.vmi.IsHighPerformanceVMI() &&
		c.vmi.Annotations[v1.FreePageReportingDisabledAnnotation] != "true" {
		b.FreePageReporting = "on"
	}
	if c.facts.iommu {
		b.Driver = &libvirtxml.DomainMemBalloonDriver{IOMMU: "on"}
	}
	d.Devices.MemBalloon = b
	return nil
}
