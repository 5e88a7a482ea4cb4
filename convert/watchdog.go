package convert

import "libvirt.org/go/libvirtxml"

// watchdog is not written yet.
func (c *converter) watchdog(d *libvirtxml.Domain) error {
	return nil
}
