package convert

import "libvirt.org/go/libvirtxml"

// memory is not written yet.
func (c *converter) memory(d *libvirtxml.Domain) error {
	return nil
}
