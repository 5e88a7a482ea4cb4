package convert

import "libvirt.org/go/libvirtxml"

// clock is not written yet.
func (c *converter) clock(d *libvirtxml.Domain) error {
	return nil
}
