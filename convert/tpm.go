package convert

import "libvirt.org/go/libvirtxml"

// tpm is not written yet.
func (c *converter) tpm(d *libvirtxml.Domain) error {
	return nil
}
