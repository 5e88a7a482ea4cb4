package convert

import "libvirt.org/go/libvirtxml"

// graphics is not written yet.
func (c *converter) graphics(d *libvirtxml.Domain) error {
	return nil
}
