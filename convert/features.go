package convert

import (
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// defaultSpinlockRetries is KubeVirt's admission default for
// features.hyperv.spinlocks.spinlocks when spinlocks are on.
const defaultSpinlockRetries = 4096

// features writes <features> as KubeVirt does on amd64: acpi (on unless
// disabled), apic, smm, the Hyper-V enlightenments (or Hyper-V
// passthrough), kvm hidden, pvspinlock and vmport off, for a VMI with
// spec.domain.features (the admission defaults always give it one); and
// the kvm hint-dedicated flag for dedicated CPUs, with the PMU off for a
// realtime VMI.
//
// apic.endOfInterrupt is left out, as KubeVirt leaves it: the APIC is a
// bare <apic/>, and the guest gets QEMU's default, which under KVM is
// paravirtual EOI on (eoi="on" would ask for what it has anyway). See
// "What Convert leaves out" in the package documentation. (api.Validate
// holds it to the APIC being on, and a Hyper-V vendor id to what libvirt
// takes.)
func (c *converter) features(d *libvirtxml.Domain) error {
	p := c.parts
	fl := &p.features
	f := c.spec.Domain.Features
	dedicated := c.spec.Domain.CPU != nil && c.spec.Domain.CPU.DedicatedCPUPlacement
	var more *featureParts
	smm := f != nil && f.SMM != nil && optionalOn(f.SMM.Enabled)
	if dedicated || f != nil && (f.APIC != nil || smm || f.KVM != nil || f.Pvspinlock != nil) {
		more = new(featureParts)
	}
	if f != nil {
		if optionalOn(f.ACPI.Enabled) {
			fl.ACPI = &p.acpi
		}
		if a := f.APIC; a != nil && optionalOn(a.Enabled) {
			fl.APIC = &more.apic
		}
		if smm {
			fl.SMM = &more.smm
		}
		hv, err := hyperv(f, &c.opts.HostFacts)
		if err != nil {
			return err
		}
		fl.HyperV = hv
		if f.KVM != nil {
			more.kvmHidden.State = boolOnOff(f.KVM.Hidden)
			more.kvm.Hidden = &more.kvmHidden
			fl.KVM = &more.kvm
		}
		if s := f.Pvspinlock; s != nil {
			more.pvSpinlock.State = boolOnOff(optionalOn(s.Enabled))
			fl.PVSpinlock = &more.pvSpinlock
		}
		// amd64 machines have a VMware I/O port unless told otherwise;
		// KubeVirt turns it off.
		p.vmPort.State = "off"
		fl.VMPort = &p.vmPort
	}
	if dedicated {
		// Dedicated vCPUs never wait for a host CPU: tell the guest so.
		more.kvmDedicated.State = "on"
		more.kvm.HintDedicated = &more.kvmDedicated
		fl.KVM = &more.kvm
		if c.facts.realtime.on {
			// KubeVirt's realtime setting: the guest gets no PMU
			// (realtimePlan).
			more.pmu.State = "off"
			fl.PMU = &more.pmu
		}
	}
	if *fl != (libvirtxml.DomainFeatureList{}) {
		d.Features = fl
	}
	return nil
}

// featureParts are the features only some VMIs have, but Hyper-V's,
// allocated together when one of them is there.
type featureParts struct {
	apic         libvirtxml.DomainFeatureAPIC
	smm          libvirtxml.DomainFeatureSMM
	kvm          libvirtxml.DomainFeatureKVM
	kvmHidden    libvirtxml.DomainFeatureState
	kvmDedicated libvirtxml.DomainFeatureState
	pvSpinlock   libvirtxml.DomainFeatureState
	pmu          libvirtxml.DomainFeatureState
}

// hyperv returns the <hyperv> element of features.hyperv (each
// enlightenment that is set, on or off) or, without it, of
// features.hypervPassthrough (api.Validate refuses both at once). The direct
// and extended TLB flushes are refused where host lacks them.
func hyperv(f *v1.Features, host *HostFacts) (*libvirtxml.DomainFeatureHyperV, error) {
	h := f.Hyperv
	if h == nil {
		if f.HypervPassthrough != nil && optionalOn(f.HypervPassthrough.Enabled) {
			return &libvirtxml.DomainFeatureHyperV{Mode: "passthrough"}, nil
		}
		return nil, nil
	}
	parts := new(hypervParts)
	hv := &parts.hyperv
	for i, s := range []struct {
		set **libvirtxml.DomainFeatureState
		vmi *v1.FeatureState
	}{
		{&hv.Relaxed, h.Relaxed},
		{&hv.VAPIC, h.VAPIC},
		{&hv.VPIndex, h.VPIndex},
		{&hv.Runtime, h.Runtime},
		{&hv.Synic, h.SyNIC},
		{&hv.Reset, h.Reset},
		{&hv.Frequencies, h.Frequencies},
		{&hv.ReEnlightenment, h.Reenlightenment},
		{&hv.IPI, h.IPI},
		{&hv.EVMCS, h.EVMCS},
	} {
		if s.vmi != nil {
			parts.states[i].State = boolOnOff(optionalOn(s.vmi.Enabled))
			*s.set = &parts.states[i]
		}
	}
	if s := h.Spinlocks; s != nil {
		on := optionalOn(s.Enabled)
		parts.spinlocks.State = boolOnOff(on)
		hv.Spinlocks = &parts.spinlocks
		switch {
		case s.Retries != nil:
			hv.Spinlocks.Retries = uint(*s.Retries)
		case on:
			hv.Spinlocks.Retries = defaultSpinlockRetries
		}
	}
	if v := h.VendorID; v != nil {
		parts.vendorID.State = boolOnOff(optionalOn(v.Enabled))
		parts.vendorID.Value = v.VendorID
		hv.VendorId = &parts.vendorID
	}
	if t := h.SyNICTimer; t != nil {
		parts.stimer.State = boolOnOff(optionalOn(t.Enabled))
		hv.STimer = &parts.stimer
		if t.Direct != nil {
			parts.stimerDirect.State = boolOnOff(optionalOn(t.Direct.Enabled))
			hv.STimer.Direct = &parts.stimerDirect
		}
	}
	if t := h.TLBFlush; t != nil {
		// libvirt 9.0 (Debian 12) knows <tlbflush> only as a switch; its
		// direct and extended flushes came in 9.1.
		for _, sub := range []struct {
			vmi  *v1.FeatureState
			set  **libvirtxml.DomainFeatureState
			part *libvirtxml.DomainFeatureState
			name string
		}{{t.Direct, &parts.tlbFlush.Direct, &parts.tlbDirect, "direct"}, {t.Extended, &parts.tlbFlush.Extended, &parts.tlbExtended, "extended"}} {
			if sub.vmi == nil {
				continue
			}
			if !host.Has(LackTLBFlushDirectExtended) {
				return nil, refuseLack(hypervPath.Child("tlbflush", sub.name), LackTLBFlushDirectExtended)
			}
			sub.part.State = boolOnOff(optionalOn(sub.vmi.Enabled))
			*sub.set = sub.part
		}
		parts.tlbFlush.State = boolOnOff(optionalOn(t.Enabled))
		hv.TLBFlush = &parts.tlbFlush
	}
	return hv, nil
}

// hypervParts are the <hyperv> element and what it points to, allocated
// together.
type hypervParts struct {
	hyperv       libvirtxml.DomainFeatureHyperV
	states       [10]libvirtxml.DomainFeatureState // the on/off enlightenments, in the order hyperv sets them
	spinlocks    libvirtxml.DomainFeatureHyperVSpinlocks
	vendorID     libvirtxml.DomainFeatureHyperVVendorId
	stimer       libvirtxml.DomainFeatureHyperVSTimer
	stimerDirect libvirtxml.DomainFeatureState
	tlbFlush     libvirtxml.DomainFeatureHyperVTLBFlush
	tlbDirect    libvirtxml.DomainFeatureState
	tlbExtended  libvirtxml.DomainFeatureState
}
