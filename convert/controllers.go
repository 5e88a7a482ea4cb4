package convert

import "libvirt.org/go/libvirtxml"

// controllers is not written yet.
func (c *converter) controllers(d *libvirtxml.Domain) error {
	return nil
}
