package convert

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

var featuresPath = domainPath.Child("features")

// defaultSpinlockRetries is KubeVirt's admission default for
// features.hyperv.spinlocks.spinlocks when spinlocks are on.
const defaultSpinlockRetries = 4096

// maxVendorIDLength is the longest Hyper-V vendor id libvirt accepts.
const maxVendorIDLength = 12

// features writes <features> as KubeVirt does on amd64: acpi (on unless
// disabled), apic, smm, the Hyper-V enlightenments (or Hyper-V
// passthrough), kvm hidden, pvspinlock and vmport off, for a VMI with
// spec.domain.features (the admission defaults always give it one); and
// the kvm hint-dedicated flag for dedicated CPUs.
//
// Unlike KubeVirt, apic.endOfInterrupt is honoured (eoi="on"); KubeVirt
// leaves it out.
func (c *converter) features(d *libvirtxml.Domain) error {
	p := c.parts
	fl := &p.features
	f := c.spec.Domain.Features
	dedicated := c.spec.Domain.CPU != nil && c.spec.Domain.CPU.DedicatedCPUPlacement
	var more *featureParts
	if dedicated || f != nil && (f.APIC != nil || smmEnabled(f) || f.KVM != nil || f.Pvspinlock != nil) {
		more = new(featureParts)
	}
	if f != nil {
		if optionalOn(f.ACPI.Enabled) {
			fl.ACPI = &p.acpi
		}
		if a := f.APIC; a != nil {
			if optionalOn(a.Enabled) {
				fl.APIC = &more.apic
				if a.EndOfInterrupt {
					fl.APIC.EOI = "on"
				}
			} else if a.EndOfInterrupt {
				return field.Forbidden(featuresPath.Child("apic", "endOfInterrupt"), "needs the APIC enabled")
			}
		}
		if smmEnabled(f) {
			fl.SMM = &more.smm
		}
		hv, err := hyperv(f)
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
}

// smmEnabled tells whether the VMI asks for System Management Mode.
func smmEnabled(f *v1.Features) bool {
	return f != nil && f.SMM != nil && optionalOn(f.SMM.Enabled)
}

// hyperv returns the <hyperv> element of features.hyperv (each
// enlightenment that is set, on or off) or of features.hypervPassthrough.
func hyperv(f *v1.Features) (*libvirtxml.DomainFeatureHyperV, error) {
	h := f.Hyperv
	passthrough := f.HypervPassthrough != nil && optionalOn(f.HypervPassthrough.Enabled)
	if h == nil {
		if passthrough {
			return &libvirtxml.DomainFeatureHyperV{Mode: "passthrough"}, nil
		}
		return nil, nil
	}
	hvPath := hypervPath
	if passthrough {
		return nil, field.Forbidden(featuresPath.Child("hypervPassthrough"), "may not be combined with spec.domain.features.hyperv")
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
		on := optionalOn(v.Enabled)
		switch {
		case on && v.VendorID == "":
			return nil, field.Required(hvPath.Child("vendorid", "vendorid"), "a Hyper-V vendor id that is on needs a value")
		case len(v.VendorID) > maxVendorIDLength:
			return nil, field.TooLong(hvPath.Child("vendorid", "vendorid"), v.VendorID, maxVendorIDLength)
		case strings.Contains(v.VendorID, ","):
			return nil, field.Invalid(hvPath.Child("vendorid", "vendorid"), v.VendorID, "may not contain a comma")
		}
		parts.vendorID.State = boolOnOff(on)
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
		// direct and extended flushes came later, and its schema refuses them.
		for _, sub := range []struct {
			set  bool
			name string
		}{{t.Direct != nil, "direct"}, {t.Extended != nil, "extended"}} {
			if sub.set {
				return nil, field.Forbidden(hvPath.Child("tlbflush", sub.name), "libvirt 9.0 has no direct or extended Hyper-V TLB flush")
			}
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
}
