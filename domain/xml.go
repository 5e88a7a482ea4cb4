package domain

import "libvirt.org/go/libvirtxml"

// Marshal returns the canonical XML of d: libvirtxml's indented form with a
// trailing newline.
func Marshal(d *libvirtxml.Domain) ([]byte, error) {
	s, err := d.Marshal()
	if err != nil {
		return nil, err
	}
	return []byte(s + "\n"), nil
}

// Unmarshal parses domain XML.
func Unmarshal(data []byte) (*libvirtxml.Domain, error) {
	d := &libvirtxml.Domain{}
	if err := d.Unmarshal(string(data)); err != nil {
		return nil, err
	}
	return d, nil
}
