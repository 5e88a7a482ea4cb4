package vmigen

import (
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// features draws spec.domain.features: ACPI (never off for EFI, which
// libvirt refuses without it), APIC with or without end of interrupt,
// SMM (on whenever secure boot needs it), Hyper-V enlightenments or
// Hyper-V passthrough, KVM hidden, pvspinlock. In the KubeVirt profile an
// APIC that is off may ask for end of interrupt, which KubeVirt ignores
// and the project refuses.
func (g *gen) features() {
	needSMM := g.secureBoot()
	if !needSMM && !g.p(0.6) {
		return // Default gives features {}: ACPI on
	}
	f := &v1.Features{}
	switch {
	case !g.efi && g.p(0.08):
		f.ACPI.Enabled = ptr(false)
	case g.p(0.1):
		f.ACPI.Enabled = ptr(true)
	}
	if g.p(0.3) {
		a := &v1.FeatureAPIC{}
		switch pickW(g, weighted[string]{4, "on"}, weighted[string]{3, "eoi"}, weighted[string]{1, "off"}) {
		case "eoi":
			a.EndOfInterrupt = true
			if g.p(0.5) {
				a.Enabled = ptr(true)
			}
		case "off":
			a.Enabled = ptr(false)
			if g.p(0.5) {
				a.EndOfInterrupt = true // ignored, as KubeVirt ignores it
			}
		}
		f.APIC = a
	}
	switch {
	case needSMM:
		f.SMM = pick(g, &v1.FeatureState{}, &v1.FeatureState{Enabled: ptr(true)})
	case g.p(0.2):
		f.SMM = pick(g, &v1.FeatureState{}, &v1.FeatureState{Enabled: ptr(false)})
	}
	switch {
	case g.p(0.25):
		f.Hyperv = g.hyperv()
	case g.p(0.05):
		f.HypervPassthrough = &v1.HyperVPassthrough{}
		if g.kv || g.p(0.3) {
			// KubeVirt's converter dereferences enabled (a nil pointer
			// panic at d923fdb815 hypervisor_features.go:73): the KubeVirt
			// profile always sets it.
			f.HypervPassthrough.Enabled = ptr(g.p(0.5))
		}
	}
	if g.p(0.1) {
		f.KVM = &v1.FeatureKVM{Hidden: g.p(0.5)}
	}
	if g.p(0.1) {
		f.Pvspinlock = pick(g, &v1.FeatureState{}, &v1.FeatureState{Enabled: ptr(false)})
	}
	g.spec.Domain.Features = f
}

// state draws a feature state: present, on, or off.
func (g *gen) state() *v1.FeatureState {
	switch pickW(g, weighted[string]{3, "present"}, weighted[string]{2, "on"}, weighted[string]{1, "off"}) {
	case "on":
		return &v1.FeatureState{Enabled: ptr(true)}
	case "off":
		return &v1.FeatureState{Enabled: ptr(false)}
	}
	return &v1.FeatureState{}
}

// hyperv draws Hyper-V enlightenments, then turns on what an enabled one
// needs (KubeVirt refuses an enlightenment whose requirement is off), and
// makes the vmx CPU feature required for enlightened VMCS. In the KubeVirt
// profile tlbflush may ask for its direct or extended flushes.
func (g *gen) hyperv() *v1.FeatureHyperv {
	h := &v1.FeatureHyperv{}
	for _, s := range []**v1.FeatureState{&h.Relaxed, &h.VAPIC, &h.VPIndex, &h.Runtime, &h.SyNIC, &h.Reset, &h.Frequencies, &h.Reenlightenment, &h.IPI, &h.EVMCS} {
		if g.p(0.4) {
			*s = g.state()
		}
	}
	if g.p(0.4) {
		h.Spinlocks = &v1.FeatureSpinlocks{FeatureState: *g.state()}
		if on(&h.Spinlocks.FeatureState) && g.p(0.5) {
			h.Spinlocks.Retries = ptr(uint32(pick(g, 4096, 8191, 65535)))
		}
	}
	if g.p(0.2) {
		h.VendorID = &v1.FeatureVendorID{FeatureState: *g.state(), VendorID: pick(g, "KVMKVMKVM", "vmigen", "123456789012")}
	}
	if g.p(0.3) {
		h.SyNICTimer = &v1.SyNICTimer{FeatureState: *g.state()}
		if g.p(0.3) {
			h.SyNICTimer.Direct = g.state()
		}
	}
	if g.p(0.3) {
		h.TLBFlush = &v1.TLBFlush{FeatureState: *g.state()}
		if g.kv && g.p(0.4) {
			tp := featuresPath.Child("hyperv", "tlbflush")
			if g.p(0.5) {
				h.TLBFlush.Direct = g.state()
				g.beyondWhereLacked(tp.Child("direct"), convert.LackTLBFlushDirectExtended)
			} else {
				h.TLBFlush.Extended = g.state()
				g.beyondWhereLacked(tp.Child("extended"), convert.LackTLBFlushDirectExtended)
			}
		}
	}
	// What an enabled enlightenment needs, leaves first (as api and
	// KubeVirt settle them): a requirement left unset is turned on by
	// Default, one turned off is turned on here.
	states := map[string]**v1.FeatureState{"vapic": &h.VAPIC, "vpindex": &h.VPIndex, "synic": &h.SyNIC, "ipi": &h.IPI, "evmcs": &h.EVMCS}
	tlb, stimer := tlbState(h), synicTimerState(h)
	states["tlbflush"], states["synictimer"] = &tlb, &stimer
	pulled := map[string]bool{} // unset, but Default turns it on
	for _, dep := range [][2]string{{"evmcs", "vapic"}, {"ipi", "vpindex"}, {"tlbflush", "vpindex"}, {"synictimer", "synic"}, {"synic", "vpindex"}} {
		feature, needs := *states[dep[0]], *states[dep[1]]
		if !on(feature) && !pulled[dep[0]] {
			continue
		}
		switch {
		case needs == nil:
			pulled[dep[1]] = true
		case needs.Enabled != nil && !*needs.Enabled:
			needs.Enabled = ptr(true)
		}
	}
	if on(h.EVMCS) {
		// Default requires vmx; a policy of the VMI's own must agree.
		c := g.spec.Domain.CPU
		if c != nil {
			for i := range c.Features {
				if c.Features[i].Name == "vmx" {
					c.Features[i].Policy = "require"
				}
			}
		}
	}
	return h
}

func tlbState(h *v1.FeatureHyperv) *v1.FeatureState {
	if h.TLBFlush == nil {
		return nil
	}
	return &h.TLBFlush.FeatureState
}

func synicTimerState(h *v1.FeatureHyperv) *v1.FeatureState {
	if h.SyNICTimer == nil {
		return nil
	}
	return &h.SyNICTimer.FeatureState
}

// on tells whether a feature state is present and not turned off.
func on(s *v1.FeatureState) bool {
	return s != nil && (s.Enabled == nil || *s.Enabled)
}
