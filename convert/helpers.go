package convert

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/internal/pciaddr"
)

// The generic helpers of the areas: how libvirt spells a bool, how the API
// reads an optional switch, a PCI address, a cpuset, a quantity in bytes,
// the <cputune> two areas write into. They read nothing of the converter.

// boolYesNo spells a bool the way libvirt's yes/no attributes do.
func boolYesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// boolOnOff spells a bool the way libvirt's on/off attributes do.
func boolOnOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// optionalOn reads an optional switch of the API that is on when left out
// (features.acpi.enabled, a Hyper-V enlightenment's enabled...).
func optionalOn(b *bool) bool {
	return b == nil || *b
}

// switchedOn reports whether an optional switch is set and true.
func switchedOn(b *bool) bool { return b != nil && *b }

// switchedOff reports whether an optional switch is set and false (most
// autoattach switches default to true).
func switchedOff(b *bool) bool { return b != nil && !*b }

// parsePCIAddress reads a PCI address "0000:81:01.0" (domain:bus:slot.function,
// in hex) into a libvirt PCI address.
func parsePCIAddress(s string) (*libvirtxml.DomainAddressPCI, error) {
	a, ok := pciaddr.Parse(s)
	if !ok {
		return nil, fmt.Errorf("not a PCI address of the form dddd:bb:ss.f")
	}
	return &libvirtxml.DomainAddressPCI{Domain: &a.Domain, Bus: &a.Bus, Slot: &a.Slot, Function: &a.Function}, nil
}

// guestPCIAddress is the guest PCI address a VMI sets for a device, or nil
// when it sets none (or one that does not parse, which api.Validate
// refuses).
func guestPCIAddress(s string) *libvirtxml.DomainAddress {
	if s == "" {
		return nil
	}
	addr, err := parsePCIAddress(s)
	if err != nil {
		return nil
	}
	return &libvirtxml.DomainAddress{PCI: addr}
}

// cpuTune is the domain's <cputune>, made by whichever of the areas that
// write into it (cpu: vCPU and emulator pins; iothreads: IO thread pins)
// comes first.
func cpuTune(d *libvirtxml.Domain) *libvirtxml.DomainCPUTune {
	if d.CPUTune == nil {
		d.CPUTune = &libvirtxml.DomainCPUTune{}
	}
	return d.CPUTune
}

// cpuList spells host CPUs as a libvirt cpuset: "2,3".
func cpuList(cpus []uint) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.FormatUint(uint64(c), 10)
	}
	return strings.Join(s, ",")
}

// bytesOf returns a memory quantity in bytes, rounded down as KubeVirt
// does; a negative quantity (which api.Validate refuses) is 0.
func bytesOf(q resource.Quantity) uint64 {
	n, exact := q.AsInt64()
	if !exact {
		n = q.Value() - 1
	}
	return uint64(max(n, 0))
}

// joinOr joins alternatives with ", " and a final " or ".
func joinOr(s []string) string {
	out := ""
	for i, x := range s {
		switch {
		case i == 0:
		case i == len(s)-1:
			out += " or "
		default:
			out += ", "
		}
		out += x
	}
	return out
}
