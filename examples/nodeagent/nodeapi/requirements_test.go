package nodeapi

import (
	"slices"
	"testing"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/hostcaps"
)

// nodeOf is a Node labelled as a node agent labels one of a host with
// facts f.
func nodeOf(name string, f convert.HostFacts) *k8sv1.Node {
	return &k8sv1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: hostcaps.NodeLabels(f)}}
}

// A VMI fits only the nodes whose labels give what KubeVirt's
// virt-controller requires of its node for it: a TCG node (this machine's
// kind: no KVM, so no Hyper-V, TSC or SEV labels), a KVM node with SEV and
// a scalable TSC, a KVM node whose TSC does not scale and whose host-model
// CPU is obsolete.
func TestFitsRequirements(t *testing.T) {
	tcg := nodeOf("tcg", convert.HostFacts{DomainType: "qemu", CPUModels: []string{"Westmere"},
		CPUFeatures: []string{"sse2"}, HostModel: &convert.HostModelCPU{Model: "EPYC"},
		MachineTypes: []string{"q35", "pc-q35-7.2"}, Hyperv: []string{"spinlocks", "vendor_id"}})
	kvm := nodeOf("kvm", convert.HostFacts{DomainType: "kvm", CPUModels: []string{"EPYC"},
		CPUFeatures: []string{"sse2", "invtsc", "vmx"}, HostModel: &convert.HostModelCPU{Model: "EPYC-Milan", Vendor: "AMD"},
		MachineTypes: []string{"q35", "pc-q35-9.0"}, Hyperv: []string{"relaxed", "vpindex", "stimer", "reenlightenment"},
		TSC: &convert.TSCCounter{Frequency: 2_994_374_000, Scalable: true}, LaunchSecurity: []string{"sev", "sev-es"}})
	fixed := nodeOf("fixed", convert.HostFacts{DomainType: "kvm", HostModel: &convert.HostModelCPU{Model: "kvm64"},
		MachineTypes: []string{"q35"}, TSC: &convert.TSCCounter{Frequency: 2_000_000_000}})
	nodes := []*k8sv1.Node{tcg, kvm, fixed}

	vmi := func(edit func(*v1.VirtualMachineInstance)) *v1.VirtualMachineInstance {
		v := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vmi"}}
		v.Spec.Domain.CPU = &v1.CPU{Model: v1.CPUModeHostModel}
		v.Spec.Domain.Machine = &v1.Machine{Type: "q35"}
		edit(v)
		return v
	}
	hints := func(freq int64) func(*v1.VirtualMachineInstance) {
		return func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.CPU.Features = []v1.CPUFeature{{Name: "invtsc", Policy: "require"}}
			v.Status.TopologyHints = &v1.TopologyHints{TSCFrequency: ptr.To(freq)}
		}
	}
	hyperv := func(v *v1.VirtualMachineInstance) {
		v.Spec.Domain.Features = &v1.Features{Hyperv: &v1.FeatureHyperv{Relaxed: &v1.FeatureState{},
			VPIndex: &v1.FeatureState{}, SyNICTimer: &v1.SyNICTimer{}}}
	}
	for _, c := range []struct {
		name   string
		vmi    *v1.VirtualMachineInstance
		strict bool
		fits   []string
	}{
		{"host-model on q35: not where host-model is obsolete", vmi(func(*v1.VirtualMachineInstance) {}), false, []string{"tcg", "kvm"}},
		{"a machine type one node has", vmi(func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Machine.Type = "pc-q35-9.0" }), false, []string{"kvm"}},
		{"the machine type the VMI runs with wins", vmi(func(v *v1.VirtualMachineInstance) {
			v.Status.Machine = &v1.Machine{Type: "pc-q35-7.2"}
		}), false, []string{"tcg"}},
		{"a named model", vmi(func(v *v1.VirtualMachineInstance) { v.Spec.Domain.CPU.Model = "Westmere" }), false, []string{"tcg"}},
		{"a required feature", vmi(func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.CPU.Features = []v1.CPUFeature{{Name: "vmx"}}
		}), false, []string{"kvm"}},
		{"a forbidden feature", vmi(func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.CPU.Features = []v1.CPUFeature{{Name: "vmx", Policy: "forbid"}}
		}), false, []string{"tcg"}},
		{"an optional feature", vmi(func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.CPU.Features = []v1.CPUFeature{{Name: "vmx", Policy: "optional"}}
		}), false, []string{"tcg", "kvm"}},
		{"SEV", vmi(func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.LaunchSecurity = &v1.LaunchSecurity{SEV: &v1.SEV{}}
		}), false, []string{"kvm"}},
		{"SEV-ES", vmi(func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.LaunchSecurity = &v1.LaunchSecurity{SEV: &v1.SEV{Policy: &v1.SEVPolicy{EncryptedState: ptr.To(true)}}}
		}), false, []string{"kvm"}},
		{"SEV-SNP", vmi(func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.LaunchSecurity = &v1.LaunchSecurity{SNP: &v1.SEVSNP{}}
		}), false, nil},
		{"realtime", vmi(func(v *v1.VirtualMachineInstance) { v.Spec.Domain.CPU.Realtime = &v1.Realtime{} }), false, nil},
		{"Hyper-V without the strict check", vmi(hyperv), false, []string{"tcg", "kvm"}},
		{"Hyper-V with the strict check", vmi(hyperv), true, []string{"kvm"}},
		{"Hyper-V disabled, strict", vmi(func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Features = &v1.Features{Hyperv: &v1.FeatureHyperv{IPI: &v1.FeatureState{Enabled: ptr.To(false)}}}
		}), true, []string{"tcg", "kvm"}},
		{"the TSC frequency of the KVM node", vmi(hints(2_994_374_000)), false, []string{"kvm"}},
		{"a TSC frequency within 250 ppm", vmi(hints(2_994_374_000 + 700_000)), false, []string{"kvm"}},
		{"a lower TSC frequency: scaled", vmi(hints(2_000_000_000)), false, []string{"kvm"}},
		{"a higher TSC frequency", vmi(hints(3_500_000_000)), false, nil},
		{"TSC hints without invtsc are not required", vmi(func(v *v1.VirtualMachineInstance) {
			v.Status.TopologyHints = &v1.TopologyHints{TSCFrequency: ptr.To(int64(3_500_000_000))}
		}), false, []string{"tcg", "kvm"}},
	} {
		var got []string
		for _, n := range nodes {
			ok, err := Scheduling{HypervStrictCheck: c.strict}.Fits(c.vmi, n, nil)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				got = append(got, n.Name)
			}
		}
		if !slices.Equal(got, c.fits) {
			t.Errorf("%s: fits %v, want %v (requirements %+v)", c.name, got, c.fits, Scheduling{HypervStrictCheck: c.strict}.RequirementsOf(c.vmi))
		}
	}
}

// A node whose TSC label is not a frequency gives no frequency.
func TestTSCFitsBadLabel(t *testing.T) {
	n := &k8sv1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{hostcaps.TSCFrequencyLabel: "fast", hostcaps.TSCScalableLabel: "true"}}}
	if TSCFits(n, 1) {
		t.Error("fits a node whose frequency is no number")
	}
}
