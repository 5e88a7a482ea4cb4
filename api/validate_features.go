package api

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
)

// maxVendorIDLength is the longest Hyper-V vendor id libvirt accepts.
const maxVendorIDLength = 12

// validateFeatures applies KubeVirt's Hyper-V rules: every enabled
// enlightenment has the ones it needs enabled (see hypervDependencies;
// Default enables those left unset), enlightened VMCS has the vmx CPU
// feature required, and hyperv and hypervPassthrough are exclusive; and
// this library's own, what libvirt needs of them (KubeVirt passes them on,
// and libvirt refuses the domain): a Hyper-V vendor id that is on has a
// value of at most 12 characters and no comma. (apic.endOfInterrupt is
// accepted with the APIC off too: KubeVirt's converter ignores it, and so
// does this library's.)
func validateFeatures(vmi *v1.VirtualMachineInstance) field.ErrorList {
	f := vmi.Spec.Domain.Features
	if f == nil {
		return nil
	}
	var errs field.ErrorList
	h := f.Hyperv
	if h == nil {
		return errs
	}
	if f.HypervPassthrough != nil {
		errs = append(errs, field.Invalid(hypervPath, "hyperv and hypervPassthrough",
			"set either "+hypervPath.String()+" or "+featuresPath.Child("hypervPassthrough").String()+", not both"))
	}
	for _, dep := range hypervDependencies {
		if !hypervOn(h, dep.name) {
			continue
		}
		if !hypervOn(h, dep.requires) {
			errs = append(errs, field.Invalid(hypervPath.Child(dep.name), true,
				fmt.Sprintf("needs %s, which is disabled", hypervPath.Child(dep.requires))))
		}
	}
	if v := h.VendorID; v != nil {
		vp := hypervPath.Child("vendorid", "vendorid")
		switch {
		case (v.Enabled == nil || *v.Enabled) && v.VendorID == "":
			errs = append(errs, field.Required(vp, "a Hyper-V vendor id that is on needs a value"))
		case len(v.VendorID) > maxVendorIDLength:
			errs = append(errs, field.TooLong(vp, v.VendorID, maxVendorIDLength))
		case strings.Contains(v.VendorID, ","):
			errs = append(errs, field.Invalid(vp, v.VendorID, "may not contain a comma"))
		}
	}
	if h.EVMCS != nil && (h.EVMCS.Enabled == nil || *h.EVMCS.Enabled) {
		c := vmi.Spec.Domain.CPU
		if c == nil || len(c.Features) == 0 {
			errs = append(errs, field.Required(cpuPath.Child("features"), "enlightened VMCS ("+hypervPath.Child("evmcs").String()+") needs the vmx CPU feature with policy require"))
		} else {
			for i, cf := range c.Features {
				if cf.Name == "vmx" && cf.Policy != "require" {
					errs = append(errs, field.Invalid(cpuPath.Child("features").Index(i).Child("policy"), cf.Policy,
						"enlightened VMCS ("+hypervPath.Child("evmcs").String()+") needs the vmx CPU feature with policy require"))
				}
			}
		}
	}
	return errs
}

// hypervOn reports whether a Hyper-V feature is on: present, with enabled
// unset or true.
func hypervOn(h *v1.FeatureHyperv, name string) bool {
	present, on := hypervState(h, name)
	return present && (on == nil || *on)
}
