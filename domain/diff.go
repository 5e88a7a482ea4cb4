package domain

import (
	"encoding/xml"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"libvirt.org/go/libvirtxml"
)

// diffOptions make Diff compare what a domain means rather than how its Go
// value was built: the XMLName that unmarshalling fills in is ignored, and a
// nil slice or map equals an empty one (both marshal to nothing).
var diffOptions = cmp.Options{
	cmpopts.IgnoreTypes(xml.Name{}),
	cmpopts.EquateEmpty(),
}

// Diff reports how got differs from want, field by field, in go-cmp's
// format: lines starting with "-" are want's, lines starting with "+" are
// got's, each under the path of the field that differs
// (Devices.Disks[0].Target.Bus, …). It returns "" when the two domains are
// equal. A nil domain differs from every non-nil one.
//
// Diff compares the domains as libvirtxml reads them back from their own
// XML: two values that marshal to the same XML are equal, so a domain built
// in Go (a converted one) and the same domain parsed from libvirt's XML
// compare equal although Unmarshal fills in empty structs the builder left
// nil (a controller's USB options, an input's source). A domain that does
// not marshal is compared as it is. Attribute order, indentation and other
// spelling of the XML do not count: use Diff on the result of Unmarshal to
// compare two XML documents by meaning.
func Diff(want, got *libvirtxml.Domain) string {
	return cmp.Diff(readBack(want), readBack(got), diffOptions)
}

// readBack returns d as libvirtxml unmarshals it from d's own XML, or d
// itself when it does not marshal.
func readBack(d *libvirtxml.Domain) *libvirtxml.Domain {
	if d == nil {
		return nil
	}
	raw, err := d.Marshal()
	if err != nil {
		return d
	}
	back := &libvirtxml.Domain{}
	if back.Unmarshal(raw) != nil {
		return d
	}
	return back
}
