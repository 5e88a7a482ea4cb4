// Package domain holds what is true of a libvirt domain whoever made it:
// canonical XML (Marshal, Unmarshal), a semantic Diff of two domains, and the
// mapping of libvirt domain state to a VMI's phase and conditions. It is pure:
// no cgo, no I/O.
//
// Marshal gives libvirtxml's bytes without libvirtxml's cost: a writer
// generated from libvirtxml's struct tags (internal/xmlgen, go generate)
// writes the types the converter fills in, a few hand-written methods
// (xmlwrite_custom.go) write the variants libvirtxml marshals with its own
// code, and any domain holding something else (a field of another type, a
// variant the converter never makes) is marshalled by libvirtxml instead,
// decided field by field. TestWriterConvertedDomains and FuzzWriter check
// the writer against libvirtxml's Marshal.
package domain
