package convert

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// checkSMMFirmware refuses a plain EFI guest without SMM where the host's
// EFI build needs SMM (Options.EFI.CodeRequiresSMM): OVMF built for SMM
// does not boot without it.
func (c *converter) checkSMMFirmware() *field.Error {
	if !c.opts.EFI.CodeRequiresSMM {
		return nil
	}
	if f := c.spec.Domain.Features; f != nil && f.SMM != nil && optionalOn(f.SMM.Enabled) {
		return nil
	}
	return field.Required(domainPath.Child("features", "smm"), "this host's EFI firmware ("+c.opts.EFI.Code+") requires SMM: enable spec.domain.features.smm")
}
