package convert

import "libvirt.org/go/libvirtxml"

// unsupported is not written yet.
func (c *converter) unsupported(d *libvirtxml.Domain) error {
	return nil
}
