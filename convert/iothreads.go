package convert

import "libvirt.org/go/libvirtxml"

// iothreads is not written yet.
func (c *converter) iothreads(d *libvirtxml.Domain) error {
	return nil
}
