package api

import (
	v1 "kubevirt.io/api/core/v1"
)

// hypervDependency says that Hyper-V feature name, when enabled, needs
// feature requires (names as in spec.domain.features.hyperv).
type hypervDependency struct {
	name, requires string
}

// hypervDependencies lists the Hyper-V enlightenments that need another,
// leaves first, in the order KubeVirt settles them (pkg/defaults/hyperv.go):
// a requirement the user left unset is enabled; one the user disabled stops
// the settling (Validate then reports it).
var hypervDependencies = []hypervDependency{
	{"evmcs", "vapic"},
	{"ipi", "vpindex"},
	{"tlbflush", "vpindex"},
	{"synictimer", "synic"},
	{"synic", "vpindex"},
}

// hypervState returns whether a Hyper-V feature is set at all and whether
// it is enabled.
func hypervState(h *v1.FeatureHyperv, name string) (set, enabled bool) {
	var e *bool
	switch name {
	case "vapic":
		if h.VAPIC != nil {
			e = h.VAPIC.Enabled
		}
	case "vpindex":
		if h.VPIndex != nil {
			e = h.VPIndex.Enabled
		}
	case "synic":
		if h.SyNIC != nil {
			e = h.SyNIC.Enabled
		}
	case "synictimer":
		if h.SyNICTimer != nil {
			e = h.SyNICTimer.Enabled
		}
	case "tlbflush":
		if h.TLBFlush != nil {
			e = h.TLBFlush.Enabled
		}
	case "ipi":
		if h.IPI != nil {
			e = h.IPI.Enabled
		}
	case "evmcs":
		if h.EVMCS != nil {
			e = h.EVMCS.Enabled
		}
	}
	return e != nil, e != nil && *e
}

// enableHyperv enables one of the features that can be a requirement.
func enableHyperv(h *v1.FeatureHyperv, name string) {
	t := true
	fs := func(p **v1.FeatureState) {
		if *p == nil {
			*p = &v1.FeatureState{}
		}
		(*p).Enabled = &t
	}
	switch name {
	case "vapic":
		fs(&h.VAPIC)
	case "vpindex":
		fs(&h.VPIndex)
	case "synic":
		fs(&h.SyNIC)
	}
}

// defaultHypervDependencies enables the Hyper-V features that enabled ones
// need and, for enlightened VMCS, requires the vmx CPU feature.
func defaultHypervDependencies(vmi *v1.VirtualMachineInstance, _ ClusterConfig) {
	f := vmi.Spec.Domain.Features
	if f == nil || f.Hyperv == nil {
		return
	}
	h := f.Hyperv
	for _, dep := range hypervDependencies {
		if _, on := hypervState(h, dep.name); !on {
			continue
		}
		set, on := hypervState(h, dep.requires)
		switch {
		case on:
		case !set:
			enableHyperv(h, dep.requires)
		default:
			return // disabled by the user: KubeVirt stops here
		}
	}
	if h.EVMCS != nil && (h.EVMCS.Enabled == nil || *h.EVMCS.Enabled) {
		requireVMX(&vmi.Spec)
	}
}

// requireVMX makes the vmx CPU feature required (enlightened VMCS needs
// nested virtualization).
func requireVMX(spec *v1.VirtualMachineInstanceSpec) {
	const vmx, require = "vmx", "require"
	if spec.Domain.CPU == nil {
		spec.Domain.CPU = &v1.CPU{}
	}
	c := spec.Domain.CPU
	for i := range c.Features {
		if c.Features[i].Name == vmx {
			c.Features[i].Policy = require
			return
		}
	}
	c.Features = append(c.Features, v1.CPUFeature{Name: vmx, Policy: require})
}
