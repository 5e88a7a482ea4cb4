package nodeapi

import (
	"strconv"

	k8sv1 "k8s.io/api/core/v1"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/hostcaps"
)

// Requirements are what a VMI asks of its node beyond its own
// nodeSelector and affinity, as KubeVirt's virt-controller adds them to
// the VMI's launcher pod (its NodeSelectorRenderer and the node affinity
// of its pod template), read against the labels a node agent writes
// (hostcaps.NodeLabels).
type Requirements struct {
	// Labels must be on the node with these values.
	Labels map[string]string
	// Absent must not be on the node.
	Absent []string
	// TSCFrequency, when not 0, is the TSC frequency (Hz) the guest must
	// see (status.topologyHints of a VMI with invtsc or Hyper-V
	// re-enlightenment): the node's TSC counter must give it (TSCFits).
	TSCFrequency int64
}

// Scheduling are the cluster-wide choices of KubeVirt's scheduling that
// change Requirements.
type Scheduling struct {
	// HypervStrictCheck requires, of the node of a VMI with Hyper-V
	// enlightenments that need the host's KVM, the
	// hyperv.node.kubevirt.io label of each (KubeVirt's feature gate
	// HypervStrictCheck; off by default, as there).
	HypervStrictCheck bool
}

// RequirementsOf are the requirements of vmi, as virt-controller renders
// them:
//
//   - a named CPU model (not host-model or host-passthrough):
//     cpu-model.node.kubevirt.io/<model>; with any model named, each CPU
//     feature of policy require (or none) cpu-feature.node.kubevirt.io/<name>;
//   - a feature of policy forbid: no cpu-feature.node.kubevirt.io/<name>;
//   - host-model (or no model): no node-labeller.kubevirt.io/obsolete-host-model;
//   - the machine type (status.machine.type, else spec.domain.machine.type):
//     machine-type.node.kubevirt.io/<type>;
//   - SEV, SEV-ES, SEV-SNP, TDX (spec.domain.launchSecurity) and Secure
//     Execution (launchSecurity on s390x): kubevirt.io/sev, sev-es, sev-snp,
//     tdx, s390-pv; realtime (spec.domain.cpu.realtime): kubevirt.io/realtime;
//   - with HypervStrictCheck, each enabled Hyper-V enlightenment that needs
//     KVM (vpindex, runtime, reset, synic, synictimer, frequencies,
//     reenlightenment, tlbflush, ipi): hyperv.node.kubevirt.io/<name>, and
//     for EVMCS cpu-vendor.node.kubevirt.io/Intel;
//   - a guest that needs a fixed TSC frequency and has it in
//     status.topologyHints: TSCFrequency.
//
// KubeVirt's kubevirt.io/cpumanager for dedicated CPUs is not required:
// a node agent pins from its host's CPU set itself and writes no such
// label.
func (s Scheduling) RequirementsOf(vmi *v1.VirtualMachineInstance) Requirements {
	r := Requirements{Labels: map[string]string{}}
	require := func(label string) { r.Labels[label] = "true" }
	dom := &vmi.Spec.Domain
	model := ""
	if dom.CPU != nil {
		model = dom.CPU.Model
	}
	if model != "" && model != v1.CPUModeHostModel && model != v1.CPUModeHostPassthrough {
		require(v1.CPUModelLabel + model)
	}
	if model == "" || model == v1.CPUModeHostModel {
		r.Absent = append(r.Absent, v1.NodeHostModelIsObsoleteLabel)
	}
	if dom.CPU != nil {
		for _, f := range dom.CPU.Features {
			switch {
			case f.Policy == "forbid":
				r.Absent = append(r.Absent, v1.CPUFeatureLabel+f.Name)
			case model != "" && (f.Policy == "" || f.Policy == "require"):
				require(v1.CPUFeatureLabel + f.Name)
			}
		}
		if dom.CPU.Realtime != nil {
			require(v1.RealtimeLabel)
		}
	}
	if m := machineType(vmi); m != "" {
		require(v1.SupportedMachineTypeLabel + m)
	}
	for _, l := range launchSecurityLabels(vmi) {
		require(l)
	}
	if s.HypervStrictCheck {
		for _, l := range hypervLabels(dom.Features) {
			require(l)
		}
	}
	if h := vmi.Status.TopologyHints; h != nil && h.TSCFrequency != nil && *h.TSCFrequency > 0 && needsTSCFrequency(vmi) {
		r.TSCFrequency = *h.TSCFrequency
	}
	return r
}

// machineType is the machine type a VMI's node must offer: the one it
// runs with, else the one it asks for.
func machineType(vmi *v1.VirtualMachineInstance) string {
	if m := vmi.Status.Machine; m != nil && m.Type != "" {
		return m.Type
	}
	if m := vmi.Spec.Domain.Machine; m != nil {
		return m.Type
	}
	return ""
}

// launchSecurityLabels are the node labels of the confidential computing
// a VMI asks for.
func launchSecurityLabels(vmi *v1.VirtualMachineInstance) []string {
	ls := vmi.Spec.Domain.LaunchSecurity
	if ls == nil {
		return nil
	}
	var out []string
	if ls.SEV != nil || ls.SNP != nil {
		out = append(out, v1.SEVLabel)
	}
	if ls.SEV != nil && ls.SEV.Policy != nil && ls.SEV.Policy.EncryptedState != nil && *ls.SEV.Policy.EncryptedState {
		out = append(out, v1.SEVESLabel)
	}
	if ls.SNP != nil {
		out = append(out, v1.SEVSNPLabel)
	}
	if ls.TDX != nil {
		out = append(out, v1.TDXLabel)
	}
	if vmi.Spec.Architecture == "s390x" {
		out = append(out, v1.SecureExecutionLabel)
	}
	return out
}

// hypervLabels are the node labels of the enabled Hyper-V enlightenments
// that need the host's KVM (KubeVirt's table: relaxed, vapic, spinlocks and
// vendor_id need nothing of it; EVMCS needs an Intel CPU).
func hypervLabels(f *v1.Features) []string {
	if f == nil || f.Hyperv == nil {
		return nil
	}
	hv := f.Hyperv
	var out []string
	for _, e := range []struct {
		on    bool
		label string
	}{
		{featureOn(hv.VPIndex), v1.HypervLabel + "vpindex"},
		{featureOn(hv.Runtime), v1.HypervLabel + "runtime"},
		{featureOn(hv.Reset), v1.HypervLabel + "reset"},
		{featureOn(hv.SyNIC), v1.HypervLabel + "synic"},
		{hv.SyNICTimer != nil && switchedOn(hv.SyNICTimer.Enabled), v1.HypervLabel + "synictimer"},
		{featureOn(hv.Frequencies), v1.HypervLabel + "frequencies"},
		{featureOn(hv.Reenlightenment), v1.HypervLabel + "reenlightenment"},
		{hv.TLBFlush != nil && switchedOn(hv.TLBFlush.Enabled), v1.HypervLabel + "tlbflush"},
		{featureOn(hv.IPI), v1.HypervLabel + "ipi"},
		{hv.EVMCS != nil && switchedOn(hv.EVMCS.Enabled), v1.CPUModelVendorLabel + "Intel"},
	} {
		if e.on {
			out = append(out, e.label)
		}
	}
	return out
}

// featureOn tells whether a feature is set and not disabled.
func featureOn(f *v1.FeatureState) bool { return f != nil && switchedOn(f.Enabled) }

// switchedOn tells whether an optional enabled field is on (unset is on).
func switchedOn(enabled *bool) bool { return enabled == nil || *enabled }

// needsTSCFrequency tells whether vmi's guest needs a fixed TSC frequency:
// it requires the invtsc CPU feature, or enables Hyper-V re-enlightenment.
func needsTSCFrequency(vmi *v1.VirtualMachineInstance) bool {
	if cpu := vmi.Spec.Domain.CPU; cpu != nil {
		for _, f := range cpu.Features {
			if f.Name == "invtsc" && (f.Policy == "require" || f.Policy == "force") {
				return true
			}
		}
	}
	f := vmi.Spec.Domain.Features
	return f != nil && f.Hyperv != nil && f.Hyperv.Reenlightenment != nil && f.Hyperv.Reenlightenment.Enabled != nil && *f.Hyperv.Reenlightenment.Enabled
}

// tscTolerancePPM is how far from a host's TSC frequency QEMU lets a
// guest's be without TSC scaling (KubeVirt's 250 parts per million).
const tscTolerancePPM = 250

// TSCFits tells whether node's TSC counter (its
// cpu-timer.node.kubevirt.io labels) gives a guest the frequency freq (Hz):
// within QEMU's tolerance of the node's, or below it where the counter
// scales (KubeVirt's scheduling.node.kubevirt.io/tsc-frequency-<freq>
// rule). A node without the label, or with one that is not a frequency,
// does not.
func TSCFits(node *k8sv1.Node, freq int64) bool {
	nodeFreq, err := strconv.ParseInt(node.Labels[hostcaps.TSCFrequencyLabel], 10, 64)
	if err != nil || nodeFreq <= 0 {
		return false
	}
	diff := freq - nodeFreq
	if diff < 0 {
		diff = -diff
	}
	if diff <= nodeFreq*tscTolerancePPM/1_000_000 {
		return true
	}
	return node.Labels[hostcaps.TSCScalableLabel] == "true" && freq <= nodeFreq
}

// Met tells whether node meets r.
func (r Requirements) Met(node *k8sv1.Node) bool {
	for k, v := range r.Labels {
		if got, ok := node.Labels[k]; !ok || got != v {
			return false
		}
	}
	for _, k := range r.Absent {
		if _, ok := node.Labels[k]; ok {
			return false
		}
	}
	return r.TSCFrequency == 0 || TSCFits(node, r.TSCFrequency)
}
