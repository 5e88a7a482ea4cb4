package convert

import "libvirt.org/go/libvirtxml"

// hostDevices is not written yet.
func (c *converter) hostDevices(d *libvirtxml.Domain) error {
	return nil
}
