package convert

import "libvirt.org/go/libvirtxml"

// cpu is not written yet.
func (c *converter) cpu(d *libvirtxml.Domain) error {
	return nil
}
