package convert

import (
	"testing"

	v1 "kubevirt.io/api/core/v1"
)

// The tsc timer follows KubeVirt's IsManualTSCFrequencyRequired: a
// frequency hint alone is not enough; invtsc (require/force) or Hyper-V
// re-enlightenment asks for it.
func TestClockTSCFrequency(t *testing.T) {
	freq := int64(2_000_000_000)
	vmi := computeVMI(&v1.CPU{Features: []v1.CPUFeature{{Name: "invtsc", Policy: "optional"}}})
	vmi.Status.TopologyHints = &v1.TopologyHints{TSCFrequency: &freq}
	d, _, err := runArea(t, vmi, nil, (*converter).clock)
	if err != nil || d.Clock != nil {
		t.Errorf("optional invtsc: %v, clock %+v", err, d.Clock)
	}
	on := true
	vmi.Spec.Domain.Features = &v1.Features{Hyperv: &v1.FeatureHyperv{Reenlightenment: &v1.FeatureState{Enabled: &on}}}
	d, _, _ = runArea(t, vmi, nil, (*converter).clock)
	// No offset in the VMI: utc, libvirt's reading of none (KubeVirt
	// writes none, which libvirt's schema refuses).
	if d.Clock == nil || len(d.Clock.Timer) != 1 || d.Clock.Timer[0].Name != "tsc" || d.Clock.Timer[0].Frequency != 2_000_000_000 || d.Clock.Offset != "utc" {
		t.Errorf("re-enlightenment: clock %+v", d.Clock)
	}
}
