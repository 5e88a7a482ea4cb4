package convert

import "libvirt.org/go/libvirtxml"

// interfaces is not written yet.
func (c *converter) interfaces(d *libvirtxml.Domain) error {
	return nil
}
