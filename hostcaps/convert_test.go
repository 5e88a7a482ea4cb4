package hostcaps_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/hostcaps"
	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

// The facts of this host's captured documents, given to the converter,
// refuse what the host lacks at the VMI's fields and convert the rest.
func TestFactsRefuseWhatTheHostLacks(t *testing.T) {
	facts, err := hostcaps.Facts(readCase(t, "testdata/debian12-emulated"))
	if err != nil {
		t.Fatal(err)
	}
	opts := convert.KubeVirtOptions()
	opts.DomainType = "qemu"
	opts.HostFacts = facts
	vmi := func(cpu, extra string) []byte {
		return []byte(`apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: facts, namespace: default}
spec:
  domain:
    cpu: {model: ` + cpu + `}
    memory: {guest: 128Mi}
    devices: {}
` + extra)
	}
	for _, c := range []struct {
		name  string
		doc   []byte
		wants []string // "" converts
	}{
		{"usable model", vmi("Westmere", ""), nil},
		{"host-model", vmi("host-model", ""), nil},
		{"model and machine the host lacks", vmi("Skylake-Server-v4", "    machine: {type: pc-q35-rhel9.6.0}\n"), []string{
			`spec.domain.cpu.model: Unsupported value: "Skylake-Server-v4": this host's QEMU offers "qemu64", "qemu32"`,
			`spec.domain.machine.type: Unsupported value: "pc-q35-rhel9.6.0": this host's QEMU offers "pc-i440fx-7.2"`}},
		{"required features the host has", vmi("host-model, features: [{name: sse2}, {name: vmx, policy: optional}]", ""), nil},
		{"required feature the host lacks", vmi("Westmere, features: [{name: sse2}, {name: vmx, policy: require}]", ""), []string{
			`spec.domain.cpu.features[1].name: Invalid value: "vmx": this host's CPU lacks it (it is not among the 75 features`}},
		{"required feature host-model disables", vmi("host-model, features: [{name: vme, policy: force}]", ""), []string{
			`spec.domain.cpu.features[0].name: Invalid value: "vme": this host's CPU lacks it (its host-model CPU, EPYC, disables it)`}},
		{"host-passthrough under emulation", vmi("host-passthrough", ""), []string{"spec.domain.cpu.model: Forbidden: this host's QEMU offers no host-passthrough CPU"}},
		{"tlbflush direct on libvirt 9.0", vmi("host-model", "    features:\n      hyperv:\n        vpindex: {}\n        tlbflush: {direct: {}}\n"),
			[]string{"spec.domain.features.hyperv.tlbflush.direct: Forbidden: this host's libvirt has no direct or extended Hyper-V TLB flush"}},
	} {
		_, err := pipeline.FromDocument(c.doc, pipeline.Config{Options: opts})
		if c.wants == nil {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: converts", c.name)
			continue
		}
		for _, want := range c.wants {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v\nwant %q", c.name, err, want)
			}
		}
	}
}

// The EFI builds EFI chooses from captured descriptors, given to the
// converter, boot what they can and refuse the rest at the VMI's field:
// this host without its enrolled-keys descriptor has no secure boot, the
// hand-written KVM host only secure boot.
func TestEFIRefusesWhatTheHostLacks(t *testing.T) {
	vmi := func(secure string) []byte {
		return []byte(`apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: efi, namespace: default}
spec:
  domain:
    memory: {guest: 128Mi}
    features: {smm: {}}
    firmware: {bootloader: {efi: {secureBoot: ` + secure + `}}}
    devices: {}
`)
	}
	debian := readCase(t, "testdata/debian12-emulated")
	debian.Firmware = slices.DeleteFunc(slices.Clone(debian.Firmware), func(d hostcaps.Descriptor) bool {
		return strings.Contains(d.Name, "enrolled")
	})
	for _, c := range []struct {
		name   string
		docs   hostcaps.Documents
		secure string
		want   string // "" converts
	}{
		{"plain EFI", readCase(t, "testdata/debian12-emulated"), "false", ""},
		{"secure boot", readCase(t, "testdata/debian12-emulated"), "true", ""},
		{"secure boot without enrolled keys", debian, "true", "spec.domain.firmware.bootloader.efi.secureBoot: Invalid value: true: no secure-boot firmware"},
		{"plain EFI on a secure-boot-only host", readCase(t, "testdata/libvirt-docs-kvm-two-cells"), "false", "spec.domain.firmware.bootloader.efi: Forbidden: no EFI firmware"},
		{"secure boot on a secure-boot-only host", readCase(t, "testdata/libvirt-docs-kvm-two-cells"), "true", ""},
	} {
		facts, err := hostcaps.Facts(c.docs)
		if err != nil {
			t.Fatal(err)
		}
		opts := convert.KubeVirtOptions()
		opts.HostFacts = facts
		opts.EFI, _ = hostcaps.EFI(facts.Firmware, facts.Machine)
		_, err = pipeline.FromDocument(vmi(c.secure), pipeline.Config{Options: opts})
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
