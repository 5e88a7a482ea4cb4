package hostcaps

import (
	"fmt"
	"slices"

	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// Facts reads the documents of a host into the converter's host facts:
// machine types (capabilities, for the domain capabilities' architecture
// and domain type), usable and known CPU models and the host-model CPU
// (domain capabilities), the CPU features (the expanded host-model CPU),
// firmware (descriptors), the NUMA topology and the TSC counter
// (capabilities), the Hyper-V enlightenments and confidential-computing
// forms (domain capabilities)
// and what the host lacks of KubeVirt's domain (the CPU modes and TPM
// backends the domain capabilities offer, the refused probes, the
// programs). Lacks are in the order of the convert.Lack constants' table
// (lackOrder).
func Facts(docs Documents) (convert.HostFacts, error) {
	f := convert.HostFacts{Libvirt: docs.Libvirt, QEMU: docs.QEMU}
	dc := &libvirtxml.DomainCaps{}
	if err := dc.Unmarshal(string(docs.DomainCapabilities)); err != nil {
		return f, fmt.Errorf("domain capabilities: %w", err)
	}
	caps := &libvirtxml.Caps{}
	if err := caps.Unmarshal(string(docs.Capabilities)); err != nil {
		return f, fmt.Errorf("capabilities: %w", err)
	}
	f.Arch, f.DomainType, f.Machine = dc.Arch, dc.Domain, dc.Machine
	f.MachineTypes = machineTypes(caps, dc.Arch, dc.Domain)
	lacks := map[convert.Lack]bool{}
	cpuFacts(&f, dc, lacks)
	var err error
	if f.CPUFeatures, err = cpuFeatures(docs.CPUFeatures); err != nil {
		return f, err
	}
	f.NUMA = numaCells(caps)
	f.TSC = tscCounter(caps)
	f.Hyperv = hyperv(dc)
	f.LaunchSecurity = launchSecurity(dc)
	if f.Firmware, err = firmware(docs.Firmware, dc.Arch); err != nil {
		return f, err
	}
	if !tpmEmulator(dc) || !docs.Programs["swtpm"] {
		lacks[convert.LackTPMEmulator] = true
	}
	if !docs.Programs["passt"] {
		lacks[convert.LackPasst] = true
	}
	for _, l := range docs.Refused {
		lacks[l] = true
	}
	for _, l := range lackOrder {
		if lacks[l] {
			f.Lacks = append(f.Lacks, l)
		}
	}
	return f, nil
}

// lackOrder is the order Facts lists Lacks in.
var lackOrder = []convert.Lack{
	convert.LackHostModel, convert.LackHostPassthrough,
	convert.LackSlotlessMaxMemory, convert.LackDiscardGranularity, convert.LackTLBFlushDirectExtended,
	convert.LackDiskIOThreads, convert.LackPvpanic, convert.LackTPMEmulator, convert.LackPasst,
}

// machineTypes lists the machine types of arch's guests of domainType, each
// name then its canonical name when it is an alias, without repeats, in
// libvirt's order: the machines of the arch (QEMU's), then those the
// domain type adds.
func machineTypes(caps *libvirtxml.Caps, arch, domainType string) []string {
	out := []string{}
	add := func(ms []libvirtxml.CapsGuestMachine) {
		for _, m := range ms {
			for _, name := range []string{m.Name, m.Canonical} {
				if name != "" && !slices.Contains(out, name) {
					out = append(out, name)
				}
			}
		}
	}
	for _, g := range caps.Guests {
		if g.Arch.Name != arch {
			continue
		}
		add(g.Arch.Machines)
		for _, d := range g.Arch.Domains {
			if d.Type == domainType {
				add(d.Machines)
			}
		}
	}
	return out
}

// cpuFacts reads the CPU modes of the domain capabilities: the named models
// usable with their domain type and all it knows, the host-model CPU, and which of
// host-model and host-passthrough the host lacks.
func cpuFacts(f *convert.HostFacts, dc *libvirtxml.DomainCaps, lacks map[convert.Lack]bool) {
	f.CPUModels = []string{}
	supported := map[string]bool{}
	if dc.CPU != nil {
		for _, m := range dc.CPU.Modes {
			supported[m.Name] = m.Supported == "yes"
			switch {
			case m.Supported != "yes":
			case m.Name == "custom":
				for _, model := range m.Models {
					if model.Usable == "yes" {
						f.CPUModels = append(f.CPUModels, model.Name)
					}
					if model.Usable != "" {
						f.KnownCPUModels = append(f.KnownCPUModels, model.Name)
					}
				}
			case m.Name == "host-model" && len(m.Models) > 0:
				hm := &convert.HostModelCPU{Model: m.Models[0].Name, Vendor: m.Vendor}
				for _, feat := range m.Features {
					switch feat.Policy {
					case "require", "force":
						hm.Features = append(hm.Features, feat.Name)
					case "disable", "forbid":
						hm.Disabled = append(hm.Disabled, feat.Name)
					}
				}
				f.HostModel = hm
			}
		}
	}
	lacks[convert.LackHostModel] = !supported["host-model"]
	lacks[convert.LackHostPassthrough] = !supported["host-passthrough"]
}

// tpmEmulator tells whether the domain capabilities offer an emulated TPM.
func tpmEmulator(dc *libvirtxml.DomainCaps) bool {
	if dc.Devices == nil || dc.Devices.TPM == nil || dc.Devices.TPM.Supported != "yes" {
		return false
	}
	for _, e := range dc.Devices.TPM.Enums {
		if e.Name == "backendModel" {
			return slices.Contains(e.Values, "emulator")
		}
	}
	return false
}
