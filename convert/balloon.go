package convert

import "libvirt.org/go/libvirtxml"

// balloon is not written yet.
func (c *converter) balloon(d *libvirtxml.Domain) error {
	return nil
}
