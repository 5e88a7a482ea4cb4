package convert

import "libvirt.org/go/libvirtxml"

// sysinfo is not written yet.
func (c *converter) sysinfo(d *libvirtxml.Domain) error {
	return nil
}
