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
// Diff compares the parsed domains, so attribute order, indentation and
// other spelling of the XML do not count; use it on the result of Unmarshal
// to compare two XML documents by meaning.
func Diff(want, got *libvirtxml.Domain) string {
	return cmp.Diff(want, got, diffOptions)
}
