package convert

import "libvirt.org/go/libvirtxml"

// features is not written yet.
func (c *converter) features(d *libvirtxml.Domain) error {
	return nil
}
