package convert

import "libvirt.org/go/libvirtxml"

// disks is not written yet.
func (c *converter) disks(d *libvirtxml.Domain) error {
	return nil
}
