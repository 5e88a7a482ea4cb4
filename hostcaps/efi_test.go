package hostcaps_test

import (
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/hostcaps"
)

// EFI picks the descriptors' plain build, their secure-boot build with
// enrolled keys (never the secure-boot build without keys) and their
// first amd-sev build without secure boot or SMM (Debian's plain one), for
// the machine type; on a host with no descriptors, or none for the machine,
// it says so.
func TestEFI(t *testing.T) {
	for _, c := range []struct {
		dir, machine string
		want         convert.EFIFirmware
		ok           bool
	}{
		{"testdata/debian12-emulated", "pc-q35-7.2", convert.EFIFirmware{
			Code: "/usr/share/OVMF/OVMF_CODE_4M.fd", Vars: "/usr/share/OVMF/OVMF_VARS_4M.fd",
			SecureBootCode: "/usr/share/OVMF/OVMF_CODE_4M.ms.fd", SecureBootVars: "/usr/share/OVMF/OVMF_VARS_4M.ms.fd",
			SEVCode: "/usr/share/OVMF/OVMF_CODE_4M.fd"}, true},
		// Only the plain build targets i440fx.
		{"testdata/debian12-emulated", "pc-i440fx-7.2", convert.EFIFirmware{
			Code: "/usr/share/OVMF/OVMF_CODE_4M.fd", Vars: "/usr/share/OVMF/OVMF_VARS_4M.fd", SEVCode: "/usr/share/OVMF/OVMF_CODE_4M.fd"}, true},
		{"testdata/debian12-emulated", "microvm", convert.EFIFirmware{}, false},
		// A secure-boot build only: plain EFI has none.
		{"testdata/libvirt-docs-kvm-two-cells", "pc-q35-9.0", convert.EFIFirmware{
			SecureBootCode: "/usr/share/edk2/ovmf/OVMF_CODE.secboot.fd", SecureBootVars: "/usr/share/edk2/ovmf/OVMF_VARS.secboot.fd"}, true},
		{"testdata/libvirt-docs-minimal", "pc-i440fx-6.2", convert.EFIFirmware{}, false},
	} {
		facts, err := hostcaps.Facts(readCase(t, c.dir))
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := hostcaps.EFI(facts.Firmware, c.machine); got != c.want || ok != c.ok {
			t.Errorf("%s %s: %+v %v, want %+v %v", c.dir, c.machine, got, ok, c.want, c.ok)
		}
	}
	// A plain build that needs SMM says so.
	smm := []convert.Firmware{{Interfaces: []string{"uefi"}, Code: "smm.fd", Vars: "vars.fd", RequiresSMM: true, Machines: []string{"pc-q35-*"}}}
	if got, _ := hostcaps.EFI(smm, "pc-q35-7.2"); got != (convert.EFIFirmware{Code: "smm.fd", Vars: "vars.fd", CodeRequiresSMM: true}) {
		t.Errorf("plain build requiring SMM: %+v", got)
	}
	// An amd-sev build that needs SMM or boots securely is no SEV choice.
	sev := []convert.Firmware{
		{Interfaces: []string{"uefi"}, Code: "sev-smm.fd", Vars: "vars.fd", AMDSEV: true, RequiresSMM: true, Machines: []string{"pc-q35-*"}},
		{Interfaces: []string{"uefi"}, Code: "sev-sb.fd", Vars: "vars.fd", AMDSEV: true, SecureBoot: true, EnrolledKeys: true, Machines: []string{"pc-q35-*"}},
		{Interfaces: []string{"uefi"}, Code: "sev.fd", Vars: "vars.fd", AMDSEV: true, Machines: []string{"pc-q35-*"}},
	}
	if got, _ := hostcaps.EFI(sev, "pc-q35-7.2"); got.SEVCode != "sev.fd" {
		t.Errorf("SEV build: %+v, want sev.fd", got)
	}
	// The secure-boot build without enrolled keys is no secure-boot choice.
	noKeys := []convert.Firmware{{Interfaces: []string{"uefi"}, Code: "sb.fd", Vars: "vars.fd", SecureBoot: true, Machines: []string{"pc-q35-*"}}}
	if got, ok := hostcaps.EFI(noKeys, "pc-q35-7.2"); got != (convert.EFIFirmware{}) || !ok {
		t.Errorf("secure boot without enrolled keys: %+v %v", got, ok)
	}
}
