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
	fl := &libvirtxml.DomainFeatureList{}
	if f := c.spec.Domain.Features; f != nil {
		if optionalOn(f.ACPI.Enabled) {
			fl.ACPI = &libvirtxml.DomainFeature{}
		}
		if a := f.APIC; a != nil {
			if optionalOn(a.Enabled) {
				fl.APIC = &libvirtxml.DomainFeatureAPIC{}
				if a.EndOfInterrupt {
					fl.APIC.EOI = "on"
				}
			} else if a.EndOfInterrupt {
				return field.Forbidden(featuresPath.Child("apic", "endOfInterrupt"), "needs the APIC enabled")
			}
		}
		if smmEnabled(f) {
			fl.SMM = &libvirtxml.DomainFeatureSMM{}
		}
		hv, err := hyperv(f)
		if err != nil {
			return err
		}
		fl.HyperV = hv
		if f.KVM != nil {
			fl.KVM = &libvirtxml.DomainFeatureKVM{Hidden: &libvirtxml.DomainFeatureState{State: boolOnOff(f.KVM.Hidden)}}
		}
		if p := f.Pvspinlock; p != nil {
			fl.PVSpinlock = &libvirtxml.DomainFeatureState{State: boolOnOff(optionalOn(p.Enabled))}
		}
		// amd64 machines have a VMware I/O port unless told otherwise;
		// KubeVirt turns it off.
		fl.VMPort = &libvirtxml.DomainFeatureState{State: "off"}
	}
	if cpu := c.spec.Domain.CPU; cpu != nil && cpu.DedicatedCPUPlacement {
		// Dedicated vCPUs never wait for a host CPU: tell the guest so.
		if fl.KVM == nil {
			fl.KVM = &libvirtxml.DomainFeatureKVM{}
		}
		fl.KVM.HintDedicated = &libvirtxml.DomainFeatureState{State: "on"}
	}
	if *fl != (libvirtxml.DomainFeatureList{}) {
		d.Features = fl
	}
	return nil
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
	hv := &libvirtxml.DomainFeatureHyperV{
		Relaxed:         featureState(h.Relaxed),
		VAPIC:           featureState(h.VAPIC),
		VPIndex:         featureState(h.VPIndex),
		Runtime:         featureState(h.Runtime),
		Synic:           featureState(h.SyNIC),
		Reset:           featureState(h.Reset),
		Frequencies:     featureState(h.Frequencies),
		ReEnlightenment: featureState(h.Reenlightenment),
		IPI:             featureState(h.IPI),
		EVMCS:           featureState(h.EVMCS),
	}
	if s := h.Spinlocks; s != nil {
		on := optionalOn(s.Enabled)
		hv.Spinlocks = &libvirtxml.DomainFeatureHyperVSpinlocks{DomainFeatureState: libvirtxml.DomainFeatureState{State: boolOnOff(on)}}
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
		hv.VendorId = &libvirtxml.DomainFeatureHyperVVendorId{DomainFeatureState: libvirtxml.DomainFeatureState{State: boolOnOff(on)}, Value: v.VendorID}
	}
	if t := h.SyNICTimer; t != nil {
		hv.STimer = &libvirtxml.DomainFeatureHyperVSTimer{DomainFeatureState: libvirtxml.DomainFeatureState{State: boolOnOff(optionalOn(t.Enabled))}}
		if t.Direct != nil {
			hv.STimer.Direct = featureState(t.Direct)
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
		hv.TLBFlush = &libvirtxml.DomainFeatureHyperVTLBFlush{DomainFeatureState: libvirtxml.DomainFeatureState{State: boolOnOff(optionalOn(t.Enabled))}}
	}
	return hv, nil
}

// featureState returns an on/off element for an optional feature switch
// (nil when the VMI leaves the feature out).
func featureState(s *v1.FeatureState) *libvirtxml.DomainFeatureState {
	if s == nil {
		return nil
	}
	return &libvirtxml.DomainFeatureState{State: boolOnOff(optionalOn(s.Enabled))}
}
