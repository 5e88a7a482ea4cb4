package convert

import "testing"

// A host whose plain EFI build needs SMM refuses a plain EFI guest without
// it at spec.domain.features.smm, and converts it with SMM on.
func TestOSEFIRequiresSMM(t *testing.T) {
	off := false
	needsSMM := func(o *Options) { o.EFI.CodeRequiresSMM = true }
	_, _, err := runArea(t, efiVMI(&off, false), needsSMM, (*converter).os)
	fieldErr(t, err, "spec.domain.features.smm", "requires SMM")
	if _, _, err := runArea(t, efiVMI(&off, true), needsSMM, (*converter).os); err != nil {
		t.Errorf("plain EFI with SMM: %v", err)
	}
	if _, _, err := runArea(t, efiVMI(&off, false), nil, (*converter).os); err != nil {
		t.Errorf("plain EFI without SMM on a build that does not need it: %v", err)
	}
}
