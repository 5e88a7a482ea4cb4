package convert

import "libvirt.org/go/libvirtxml"

// rng adds a virtio random number generator fed from the host's
// /dev/urandom when spec.domain.devices.rng is set.
func (c *converter) rng(d *libvirtxml.Domain) error {
	if c.spec.Domain.Devices.Rng == nil {
		return nil
	}
	p := c.parts
	p.rngRandom.Device = "/dev/urandom"
	p.rngBackend.Random = &p.rngRandom
	p.rngs[0] = libvirtxml.DomainRNG{Model: c.facts.virtioModel, Backend: &p.rngBackend}
	if c.facts.iommu {
		p.rngs[0].Driver = &libvirtxml.DomainRNGDriver{IOMMU: "on"}
	}
	d.Devices.RNGs = p.rngs[:]
	return nil
}
