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

// hypervState returns whether a Hyper-V feature is present in the spec and
// its enabled field (nil when unset).
func hypervState(h *v1.FeatureHyperv, name string) (present bool, on *bool) {
	switch name {
	case "vapic":
		if h.VAPIC != nil {
			return true, h.VAPIC.Enabled
		}
	case "vpindex":
		if h.VPIndex != nil {
			return true, h.VPIndex.Enabled
		}
	case "synic":
		if h.SyNIC != nil {
			return true, h.SyNIC.Enabled
		}
	case "synictimer":
		if h.SyNICTimer != nil {
			return true, h.SyNICTimer.Enabled
		}
	case "tlbflush":
		if h.TLBFlush != nil {
			return true, h.TLBFlush.Enabled
		}
	case "ipi":
		if h.IPI != nil {
			return true, h.IPI.Enabled
		}
	case "evmcs":
		if h.EVMCS != nil {
			return true, h.EVMCS.Enabled
		}
	}
	return false, nil
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
		// As KubeVirt: after kubevirt.io/api's defaults a present feature
		// has enabled set; a requirement is "missing" when absent or unset.
		if _, on := hypervState(h, dep.name); !isTrue(on) {
			continue
		}
		_, req := hypervState(h, dep.requires)
		switch {
		case isTrue(req):
		case req == nil:
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
