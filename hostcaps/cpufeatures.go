package hostcaps

import (
	"fmt"

	"libvirt.org/go/libvirtxml"
)

// HostModelCPU is the host-model CPU of the domain capabilities
// domainCapabilities as a <cpu> element: what the launcher asks libvirt to
// expand into Documents.CPUFeatures (BaselineHypervisorCPU with
// CONNECT_BASELINE_CPU_EXPAND_FEATURES, as KubeVirt's node labeller runs
// virsh hypervisor-cpu-baseline --features). ok is false when libvirt
// offers no host-model CPU.
func HostModelCPU(domainCapabilities []byte) (cpu string, ok bool, err error) {
	dc := &libvirtxml.DomainCaps{}
	if err := dc.Unmarshal(string(domainCapabilities)); err != nil {
		return "", false, fmt.Errorf("domain capabilities: %w", err)
	}
	if dc.CPU == nil {
		return "", false, nil
	}
	for _, m := range dc.CPU.Modes {
		if m.Name != "host-model" || m.Supported != "yes" || len(m.Models) == 0 {
			continue
		}
		c := libvirtxml.DomainCPU{Mode: "custom", Match: "exact", Vendor: m.Vendor,
			Model: &libvirtxml.DomainCPUModel{Value: m.Models[0].Name, Fallback: m.Models[0].Fallback}}
		for _, f := range m.Features {
			c.Features = append(c.Features, libvirtxml.DomainCPUFeature(f))
		}
		out, err := c.Marshal()
		return out, err == nil, err
	}
	return "", false, nil
}

// cpuFeatures reads the features an expanded host-model CPU requires
// (nil for no document), in its order.
func cpuFeatures(doc []byte) ([]string, error) {
	if doc == nil {
		return nil, nil
	}
	cpu := &libvirtxml.DomainCPU{}
	if err := cpu.Unmarshal(string(doc)); err != nil {
		return nil, fmt.Errorf("host-model CPU features: %w", err)
	}
	out := []string{}
	for _, f := range cpu.Features {
		if f.Policy == "require" {
			out = append(out, f.Name)
		}
	}
	return out, nil
}
