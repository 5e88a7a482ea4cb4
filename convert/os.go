package convert

import "libvirt.org/go/libvirtxml"

// os is not written yet.
func (c *converter) os(d *libvirtxml.Domain) error {
	return nil
}
