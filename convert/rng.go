package convert

import "libvirt.org/go/libvirtxml"

// rng is not written yet.
func (c *converter) rng(d *libvirtxml.Domain) error {
	return nil
}
