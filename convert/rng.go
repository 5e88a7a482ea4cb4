package convert

import "libvirt.org/go/libvirtxml"

// rng adds a virtio random number generator fed from the host's
// /dev/urandom when spec.domain.devices.rng is set.
func (c *converter) rng(d *libvirtxml.Domain) error {
	if c.spec.Domain.Devices.Rng == nil {
		return nil
	}
	d.Devices.RNGs = append(d.Devices.RNGs, libvirtxml.DomainRNG{
		Model: c.virtioModel,
		Backend: &libvirtxml.DomainRNGBackend{
			Random: &libvirtxml.DomainRNGBackendRandom{Device: "/dev/urandom"},
		},
	})
	return nil
}
