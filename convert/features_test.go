package convert

import (
	"testing"

	v1 "kubevirt.io/api/core/v1"
)

// Without spec.domain.features (a VMI that skipped the admission defaults)
// KubeVirt writes no feature at all, not even vmport; dedicated CPUs still
// give kvm hint-dedicated.
func TestFeaturesAbsent(t *testing.T) {
	d, _, err := runArea(t, computeVMI(nil), nil, (*converter).features)
	if err != nil || d.Features != nil {
		t.Errorf("no features: %v, %+v", err, d.Features)
	}
	d, _, _ = runArea(t, computeVMI(&v1.CPU{DedicatedCPUPlacement: true}), nil, (*converter).features)
	if d.Features == nil || d.Features.KVM == nil || d.Features.KVM.HintDedicated.State != "on" || d.Features.KVM.Hidden != nil || d.Features.VMPort != nil {
		t.Errorf("dedicated: %+v", d.Features)
	}
}

// Spinlocks on without retries get KubeVirt's admission default of 4096.
func TestFeaturesSpinlocksDefault(t *testing.T) {
	vmi := computeVMI(nil)
	vmi.Spec.Domain.Features = &v1.Features{Hyperv: &v1.FeatureHyperv{Spinlocks: &v1.FeatureSpinlocks{}}}
	d, _, err := runArea(t, vmi, nil, (*converter).features)
	if err != nil {
		t.Fatal(err)
	}
	if s := d.Features.HyperV.Spinlocks; s.State != "on" || s.Retries != 4096 {
		t.Errorf("spinlocks = %+v", s)
	}
}

func TestFeaturesRefusals(t *testing.T) {
	on := true
	cases := []struct {
		name string
		f    v1.Features
		path string
		want string
		// api: the rule is the VMI's alone, api.Validate's; the others
		// are what libvirt 9.0 cannot do, the features area's (converted
		// for a host that lacks all of debian12).
		api bool
	}{
		{"vendor id without value", v1.Features{Hyperv: &v1.FeatureHyperv{VendorID: &v1.FeatureVendorID{}}}, "spec.domain.features.hyperv.vendorid.vendorid", "needs a value", true},
		{"vendor id too long", v1.Features{Hyperv: &v1.FeatureHyperv{VendorID: &v1.FeatureVendorID{VendorID: "0123456789abc"}}}, "spec.domain.features.hyperv.vendorid.vendorid", "more than 12 bytes", true},
		{"vendor id with a comma", v1.Features{Hyperv: &v1.FeatureHyperv{VendorID: &v1.FeatureVendorID{VendorID: "a,b"}}}, "spec.domain.features.hyperv.vendorid.vendorid", "comma", true},
		{"tlbflush extended", v1.Features{Hyperv: &v1.FeatureHyperv{TLBFlush: &v1.TLBFlush{Extended: &v1.FeatureState{}}}}, "spec.domain.features.hyperv.tlbflush.extended", "libvirt 9.1 added them", false},
		{"both Hyper-V modes", v1.Features{Hyperv: &v1.FeatureHyperv{}, HypervPassthrough: &v1.HyperVPassthrough{Enabled: &on}}, "spec.domain.features.hyperv", "not both", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vmi := computeVMI(nil)
			vmi.Spec.Domain.Features = &tc.f
			if tc.api {
				refusedByAPI(t, vmi, tc.path, tc.want)
				return
			}
			_, _, err := runArea(t, vmi, func(o *Options) { o.HostFacts.Lacks = debian12 }, (*converter).features)
			fieldErr(t, err, tc.path, tc.want)
		})
	}
}

// Entries without a value are left out (KubeVirt writes them empty), and
// so is the system table when nothing is left.
func TestSysinfoEmpty(t *testing.T) {
	vmi := computeVMI(nil)
	d, _, err := runArea(t, vmi, func(o *Options) { o.SMBIOS = SMBIOS{} }, (*converter).sysinfo)
	if err != nil || len(d.SysInfo) != 1 || d.SysInfo[0].SMBIOS == nil || d.SysInfo[0].SMBIOS.System != nil || d.SysInfo[0].SMBIOS.Chassis != nil {
		t.Errorf("sysinfo = %+v, %v", d.SysInfo, err)
	}
}

// debian12 are the forms Debian 12's libvirt 9.0 lacks of KubeVirt's.
var debian12 = []Lack{LackSlotlessMaxMemory, LackDiscardGranularity, LackTLBFlushDirectExtended, LackDiskIOThreads, LackPvpanic}

// With KubeVirt's libvirt (no facts), tlbflush's direct and extended
// flushes are written as KubeVirt writes them: each on or off as the VMI
// says, on when it leaves enabled out.
func TestFeaturesTLBFlushForms(t *testing.T) {
	off := false
	vmi := computeVMI(nil)
	vmi.Spec.Domain.Features = &v1.Features{Hyperv: &v1.FeatureHyperv{TLBFlush: &v1.TLBFlush{
		Direct: &v1.FeatureState{}, Extended: &v1.FeatureState{Enabled: &off}}}}
	d, _, err := runArea(t, vmi, nil, (*converter).features)
	if err != nil {
		t.Fatal(err)
	}
	tf := d.Features.HyperV.TLBFlush
	if tf == nil || tf.State != "on" || tf.Direct == nil || tf.Direct.State != "on" || tf.Extended == nil || tf.Extended.State != "off" {
		t.Errorf("tlbflush = %+v", tf)
	}
}
