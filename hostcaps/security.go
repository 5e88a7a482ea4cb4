package hostcaps

import (
	"slices"

	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// launchSecurity lists the confidential-computing forms the domain
// capabilities offer, as KubeVirt's node labeller reads them: "sev" when
// <sev supported="yes">; "sev-es" when SEV also has room for encrypted-state
// guests (maxESGuests above 0); "sev-snp" when, beside SEV-ES,
// <launchSecurity> lists the sectype sev-snp; "tdx" and "s390-pv" for
// their elements supported="yes".
func launchSecurity(dc *libvirtxml.DomainCaps) []string {
	fs := dc.Features
	if fs == nil {
		return nil
	}
	var out []string
	if sev := fs.SEV; sev != nil && sev.Supported == "yes" {
		out = append(out, "sev")
		if sev.MaxESGuests > 0 {
			out = append(out, "sev-es")
			if ls := fs.LaunchSecurity; ls != nil && ls.Supported == "yes" && enumHas(ls.Enums, "sectype", "sev-snp") {
				out = append(out, "sev-snp")
			}
		}
	}
	if fs.TDX != nil && fs.TDX.Supported == "yes" {
		out = append(out, "tdx")
	}
	if fs.S390PV != nil && fs.S390PV.Supported == "yes" {
		out = append(out, "s390-pv")
	}
	return out
}

// hyperv lists the Hyper-V enlightenments of the domain capabilities'
// <hyperv supported="yes"> (libvirt 8.0 and later), in their order.
func hyperv(dc *libvirtxml.DomainCaps) []string {
	if dc.Features == nil || dc.Features.HyperV == nil || dc.Features.HyperV.Supported != "yes" {
		return nil
	}
	for _, e := range dc.Features.HyperV.Enums {
		if e.Name == "features" {
			return slices.Clone(e.Values)
		}
	}
	return nil
}

// tscCounter reads the host CPU's TSC counter from the capabilities (nil
// when they list none, or another counter).
func tscCounter(caps *libvirtxml.Caps) *convert.TSCCounter {
	c := caps.Host.CPU
	if c == nil || c.Counter == nil || c.Counter.Name != "tsc" || c.Counter.Frequency == 0 {
		return nil
	}
	return &convert.TSCCounter{Frequency: uint64(c.Counter.Frequency), Scalable: c.Counter.Scaling == "yes"}
}

// enumHas tells whether the enum called name among enums lists value.
func enumHas(enums []libvirtxml.DomainCapsEnum, name, value string) bool {
	for _, e := range enums {
		if e.Name == name {
			return slices.Contains(e.Values, value)
		}
	}
	return false
}
