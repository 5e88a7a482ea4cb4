package convert

import (
	"testing"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// emulatedHost are the facts of a host like this one: QEMU without KVM
// (no host-passthrough), a few models, the q35 machine types.
func emulatedHost() HostFacts {
	return HostFacts{
		Arch: "x86_64", DomainType: "qemu", Machine: "pc-q35-7.2",
		MachineTypes: []string{"q35", "pc-q35-7.2", "pc", "pc-i440fx-7.2"},
		CPUModels:    []string{"qemu64", "Westmere", "EPYC"},
		HostModel:    &HostModelCPU{Model: "EPYC", Vendor: "AMD", Features: []string{"ss"}, Disabled: []string{"rdseed"}},
		Lacks:        append([]Lack{LackHostPassthrough, LackTPMEmulator}, debian12...),
	}
}

// What the host cannot give is refused at the VMI's field, with what the
// host offers instead.
func TestHostFactsRefusals(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*v1.VirtualMachineInstance)
		facts func(*HostFacts)
		areas []func(*converter, *libvirtxml.Domain) error
		path  string
		want  string
	}{
		{"model not offered", func(vmi *v1.VirtualMachineInstance) { vmi.Spec.Domain.CPU = &v1.CPU{Model: "Skylake-Server-v4"} }, nil,
			[]func(*converter, *libvirtxml.Domain) error{(*converter).cpu}, "spec.domain.cpu.model",
			`spec.domain.cpu.model: Unsupported value: "Skylake-Server-v4": this host's QEMU offers "qemu64", "Westmere", "EPYC"`},
		{"host-passthrough without KVM", func(vmi *v1.VirtualMachineInstance) { vmi.Spec.Domain.CPU = &v1.CPU{Model: v1.CPUModeHostPassthrough} }, nil,
			[]func(*converter, *libvirtxml.Domain) error{(*converter).cpu}, "spec.domain.cpu.model", "no host-passthrough CPU"},
		{"no host-model", func(vmi *v1.VirtualMachineInstance) {}, func(h *HostFacts) { h.Lacks = append(h.Lacks, LackHostModel) },
			[]func(*converter, *libvirtxml.Domain) error{(*converter).cpu}, "spec.domain.cpu.model", `"host-model": this host's libvirt offers no host-model CPU; its QEMU offers "qemu64"`},
		{"feature the host disables", func(vmi *v1.VirtualMachineInstance) {
			vmi.Spec.Domain.CPU = &v1.CPU{Features: []v1.CPUFeature{{Name: "ss"}, {Name: "rdseed", Policy: "require"}}}
		}, nil, []func(*converter, *libvirtxml.Domain) error{(*converter).cpu}, "spec.domain.cpu.features[1].name", "its host-model CPU, EPYC, disables it"},
		{"machine type", func(vmi *v1.VirtualMachineInstance) { vmi.Spec.Domain.Machine = &v1.Machine{Type: "pc-q35-rhel9.6.0"} }, nil,
			[]func(*converter, *libvirtxml.Domain) error{(*converter).os}, "spec.domain.machine.type", `Unsupported value: "pc-q35-rhel9.6.0": this host's QEMU offers "q35", "pc-q35-7.2"`},
		{"TPM without swtpm", func(vmi *v1.VirtualMachineInstance) { vmi.Spec.Domain.Devices.TPM = &v1.TPMDevice{} }, nil,
			[]func(*converter, *libvirtxml.Domain) error{(*converter).tpm}, "spec.domain.devices.tpm", "swtpm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := computeVMI(nil)
			tc.edit(vmi)
			_, _, err := runArea(t, vmi, func(o *Options) {
				o.HostFacts = emulatedHost()
				if tc.facts != nil {
					tc.facts(&o.HostFacts)
				}
			}, tc.areas...)
			fieldErr(t, err, tc.path, tc.want)
		})
	}
}

// What the host has converts as before; the zero facts (KubeVirt's
// libvirt) check nothing.
func TestHostFactsAccepted(t *testing.T) {
	vmi := computeVMI(&v1.CPU{Model: "Westmere", Features: []v1.CPUFeature{{Name: "rdseed"}}})
	vmi.Spec.Domain.Machine = &v1.Machine{Type: "q35"}
	areas := []func(*converter, *libvirtxml.Domain) error{(*converter).cpu, (*converter).os}
	d, _, err := runArea(t, vmi, func(o *Options) { o.HostFacts = emulatedHost() }, areas...)
	if err != nil {
		t.Fatal(err)
	}
	if d.CPU.Model == nil || d.CPU.Model.Value != "Westmere" || d.OS.Type.Machine != "q35" {
		t.Errorf("cpu %+v, machine %q", d.CPU.Model, d.OS.Type.Machine)
	}
	vmi.Spec.Domain.CPU.Model = "Skylake-Server-v4"
	vmi.Spec.Domain.Machine.Type = "pc-q35-rhel9.6.0"
	if _, _, err := runArea(t, vmi, nil, areas...); err != nil {
		t.Errorf("KubeVirt's libvirt: %v", err)
	}
}
