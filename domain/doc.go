// Package domain holds what is true of a libvirt domain whoever made it:
// canonical XML (Marshal, Unmarshal), a semantic Diff of two domains, and the
// mapping of libvirt domain state to a VMI's phase and conditions. It is pure:
// no cgo, no I/O.
package domain
