package convert

import "libvirt.org/go/libvirtxml"

// console is not written yet.
func (c *converter) console(d *libvirtxml.Domain) error {
	return nil
}
