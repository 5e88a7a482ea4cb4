package hostcaps

import (
	"path"
	"slices"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// EFI chooses the OVMF builds of QEMU's firmware descriptors for a guest
// of machine type machine ("pc-q35-7.2"), as libvirt's firmware
// autoselection reads them: for plain EFI the first UEFI flash build with
// a variables template and without secure boot (CodeRequiresSMM when it
// needs SMM); for secure boot the first
// with secure boot and enrolled keys (Microsoft's, the .ms variables
// KubeVirt boots secure guests with: without enrolled keys secure boot
// verifies nothing); for an AMD SEV guest the first without secure boot
// and SMM that can boot one (amd-sev), with its variables template
// (SEVCode: the converter boots SEV guests with Vars, as KubeVirt boots
// its SEV build with the plain template; the two builds' templates are
// the same on the hosts KubeVirt and Debian ship). A choice not found is left empty, and the converter
// then refuses firmware.bootloader.efi (or its secureBoot) at its field.
// ok is false when no descriptor names an EFI build for machine at all:
// the host has no descriptors, and the caller looks for OVMF's files.
func EFI(fws []convert.Firmware, machine string) (efi convert.EFIFirmware, ok bool) {
	for _, fw := range fws {
		if !slices.Contains(fw.Interfaces, "uefi") || fw.Vars == "" || !forMachine(fw.Machines, machine) {
			continue
		}
		ok = true
		if fw.AMDSEV && !fw.SecureBoot && !fw.RequiresSMM && efi.SEVCode == "" {
			efi.SEVCode = fw.Code
		}
		switch {
		case !fw.SecureBoot && efi.Code == "":
			efi.Code, efi.Vars, efi.CodeRequiresSMM = fw.Code, fw.Vars, fw.RequiresSMM
		case fw.SecureBoot && fw.EnrolledKeys && efi.SecureBootCode == "":
			efi.SecureBootCode, efi.SecureBootVars = fw.Code, fw.Vars
		}
	}
	return efi, ok
}

// forMachine tells whether one of a descriptor's machine patterns
// ("pc-q35-*") matches machine.
func forMachine(patterns []string, machine string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, machine); ok {
			return true
		}
	}
	return false
}
