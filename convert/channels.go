package convert

import "libvirt.org/go/libvirtxml"

// channels is not written yet.
func (c *converter) channels(d *libvirtxml.Domain) error {
	return nil
}
