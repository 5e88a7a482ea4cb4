package convert

import "libvirt.org/go/libvirtxml"

// sound is not written yet.
func (c *converter) sound(d *libvirtxml.Domain) error {
	return nil
}
