package api

import (
	"regexp"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
)

// maxDomainString is the longest free-text value (serials, chassis
// strings) this library writes into a domain.
const maxDomainString = 256

var (
	// cpuNameSyntax is the syntax of libvirt CPU model and feature names.
	cpuNameSyntax = regexp.MustCompile(`^[A-Za-z0-9_.+-]+$`)
	// timezoneSyntax is a tz database name: slash-separated parts of
	// letters, digits, '_', '+' and '-'.
	timezoneSyntax = regexp.MustCompile(`^[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*$`)
)

// validateStrings is this library's own family for values that end up
// verbatim in the domain XML or in host paths, so that hostile input is
// refused with its path instead of reaching libvirt: CPU model and feature
// names are libvirt names ([A-Za-z0-9_.+-]), the timezone is a tz database
// name (no "..", no leading "/"), firmware serial and chassis strings have
// no control characters (NUL, newlines) and at most 256 characters, and
// the Hyper-V vendor id and kernel arguments have no control characters.
func validateStrings(vmi *v1.VirtualMachineInstance) field.ErrorList {
	var errs field.ErrorList
	d := &vmi.Spec.Domain
	if c := d.CPU; c != nil {
		if c.Model != "" && !cpuNameSyntax.MatchString(c.Model) {
			errs = append(errs, field.Invalid(cpuPath.Child("model"), c.Model, "a CPU model name is made of [A-Za-z0-9_.+-]"))
		}
		for i, f := range c.Features {
			if f.Name != "" && !cpuNameSyntax.MatchString(f.Name) {
				errs = append(errs, field.Invalid(cpuPath.Child("features").Index(i).Child("name"), f.Name, "a CPU feature name is made of [A-Za-z0-9_.+-]"))
			}
		}
	}
	if c := d.Clock; c != nil && c.Timezone != nil {
		tz := string(*c.Timezone)
		if !timezoneSyntax.MatchString(tz) || strings.Contains(tz, "..") {
			errs = append(errs, field.Invalid(domainPath.Child("clock", "timezone"), tz, "not a time zone name such as Europe/Berlin"))
		}
	}
	text := func(p *field.Path, s string) {
		switch {
		case len(s) > maxDomainString:
			errs = append(errs, field.TooLong(p, "", maxDomainString))
		case strings.IndexFunc(s, unicode.IsControl) >= 0:
			errs = append(errs, field.Invalid(p, s, "must not contain control characters"))
		}
	}
	if fw := d.Firmware; fw != nil {
		text(firmwarePath.Child("serial"), fw.Serial)
		// XML 1.0 cannot carry most control characters: the guest would get
		// other kernel arguments than the VMI says.
		if kb := fw.KernelBoot; kb != nil && strings.IndexFunc(kb.KernelArgs, unicode.IsControl) >= 0 {
			errs = append(errs, field.Invalid(firmwarePath.Child("kernelBoot", "kernelArgs"), kb.KernelArgs, "must not contain control characters"))
		}
	}
	if ch := d.Chassis; ch != nil {
		cp := domainPath.Child("chassis")
		text(cp.Child("manufacturer"), ch.Manufacturer)
		text(cp.Child("version"), ch.Version)
		text(cp.Child("serial"), ch.Serial)
		text(cp.Child("asset"), ch.Asset)
		text(cp.Child("sku"), ch.Sku)
	}
	// The vendor id's length is the features family's (at most 12).
	if f := d.Features; f != nil && f.Hyperv != nil && f.Hyperv.VendorID != nil && strings.IndexFunc(f.Hyperv.VendorID.VendorID, unicode.IsControl) >= 0 {
		errs = append(errs, field.Invalid(hypervPath.Child("vendorid", "vendorid"), f.Hyperv.VendorID.VendorID, "must not contain control characters"))
	}
	return errs
}
