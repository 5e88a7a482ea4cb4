package convert

import "libvirt.org/go/libvirtxml"

// inputs is not written yet.
func (c *converter) inputs(d *libvirtxml.Domain) error {
	return nil
}
