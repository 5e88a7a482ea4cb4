package domain

import (
	"bytes"

	"libvirt.org/go/libvirtxml"
)

// Marshal returns the canonical XML of d: libvirtxml's indented form with a
// trailing newline.
//
// One fix is made to libvirtxml's output: a <maxMemory> with no slots is
// written with slots="0". libvirt's schema requires the attribute, and
// libvirtxml omits a zero value; KubeVirt writes slots="0" for memory
// hotplug through virtio-mem, which needs no DIMM slots.
//
// Marshal writes the converter's domains itself (xmlwrite.go), several
// times faster than libvirtxml, and hands any domain with a field or
// variant the converter does not make to libvirtxml: the bytes are the same
// either way.
func Marshal(d *libvirtxml.Domain) ([]byte, error) {
	if d == nil {
		return libvirtxmlMarshal(d)
	}
	if out, ok := writeDomain(d, make([]byte, 0, 4096)); ok {
		return append(out, '\n'), nil
	}
	return libvirtxmlMarshal(d)
}

// libvirtxmlMarshal is Marshal done by libvirtxml (encoding/xml).
func libvirtxmlMarshal(d *libvirtxml.Domain) ([]byte, error) {
	s, err := d.Marshal()
	if err != nil {
		return nil, err
	}
	out := []byte(s + "\n")
	if d.MaximumMemory != nil && d.MaximumMemory.Slots == 0 {
		out = withZeroSlots(out)
	}
	return out, nil
}

// withZeroSlots adds slots="0" to the domain's <maxMemory> start tag: the
// first one indented as a child of <domain>, so that raw metadata cannot be
// mistaken for it.
func withZeroSlots(doc []byte) []byte {
	start := bytes.Index(doc, []byte("\n  <maxMemory"))
	if start < 0 {
		return doc
	}
	end := bytes.IndexByte(doc[start:], '>')
	if end < 0 || bytes.Contains(doc[start:start+end], []byte("slots=")) {
		return doc
	}
	at := start + end
	return append(doc[:at:at], append([]byte(` slots="0"`), doc[at:]...)...)
}

// Unmarshal parses domain XML.
func Unmarshal(data []byte) (*libvirtxml.Domain, error) {
	d := &libvirtxml.Domain{}
	if err := d.Unmarshal(string(data)); err != nil {
		return nil, err
	}
	return d, nil
}
