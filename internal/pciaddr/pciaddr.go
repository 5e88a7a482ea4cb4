// Package pciaddr reads PCI addresses as KubeVirt writes them,
// domain:bus:slot.function in hex ("0000:81:00.0"), for api's checks of
// guest addresses and convert's guest and host addresses alike.
package pciaddr

import (
	"regexp"
	"strconv"
)

// syntax is KubeVirt's PCI address syntax, dddd:bb:ss.f.
var syntax = regexp.MustCompile(`^([\da-fA-F]{4}):([\da-fA-F]{2}):([\da-fA-F]{2})\.([0-7])$`)

// Address is a parsed PCI address.
type Address struct {
	Domain, Bus, Slot, Function uint
}

// Parse reads s; ok is false when s is not of the form dddd:bb:ss.f.
func Parse(s string) (a Address, ok bool) {
	m := syntax.FindStringSubmatch(s)
	if m == nil {
		return Address{}, false
	}
	parts := []*uint{&a.Domain, &a.Bus, &a.Slot, &a.Function}
	for i, p := range parts {
		n, _ := strconv.ParseUint(m[i+1], 16, 16) // at most four hex digits
		*p = uint(n)
	}
	return a, true
}
