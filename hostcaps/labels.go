package hostcaps

import (
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// ObsoleteCPUModels are the CPU models KubeVirt's node labeller leaves
// out of a node's cpu-model labels by default (the KubeVirt CR's
// spec.configuration.obsoleteCPUModels): models too old to schedule on.
var ObsoleteCPUModels = []string{
	"486", "486-v1", "pentium", "pentium-v1", "pentium2", "pentium2-v1", "pentium3", "pentium3-v1",
	"pentiumpro", "pentiumpro-v1", "coreduo", "coreduo-v1", "n270", "n270-v1", "core2duo", "core2duo-v1",
	"Conroe", "Conroe-v1", "athlon", "athlon-v1", "phenom", "phenom-v1", "qemu64", "qemu64-v1",
	"qemu32", "qemu32-v1", "kvm64", "kvm64-v1", "kvm32", "kvm32-v1",
	"Opteron_G1", "Opteron_G1-v1", "Opteron_G2", "Opteron_G2-v1",
}

// NodeLabels are the labels KubeVirt's node labeller (virt-handler) puts
// on a Node for what its host can run, read from the host's facts, each
// with the value "true" unless said otherwise:
//
//	cpu-model.node.kubevirt.io/<model>     each usable named model (CPUModels) but the obsolete ones
//	                                       (ObsoleteCPUModels)
//	cpu-model-migration.node.kubevirt.io/<model>
//	                                       each known named model (KnownCPUModels) but the obsolete ones
//	cpu-feature.node.kubevirt.io/<feature> each feature of CPUFeatures
//	host-model-cpu.node.kubevirt.io/<model>, cpu-vendor.node.kubevirt.io/<vendor>,
//	host-model-required-features.node.kubevirt.io/<feature>
//	                                       the host-model CPU, its vendor and the features it adds
//	node-labeller.kubevirt.io/obsolete-host-model  when the host-model CPU is obsolete
//	machine-type.node.kubevirt.io/<type>   each machine type (alias and canonical name)
//	hyperv.node.kubevirt.io/<name>         each Hyper-V enlightenment KVM gives (HypervLabels)
//	cpu-timer.node.kubevirt.io/tsc-frequency, cpu-timer.node.kubevirt.io/tsc-scalable
//	                                       the TSC counter: its frequency in Hz, "true" or "false"
//	kubevirt.io/sev, kubevirt.io/sev-es, kubevirt.io/sev-snp, kubevirt.io/tdx, kubevirt.io/s390-pv
//	                                       each confidential-computing form of LaunchSecurity
//
// A name that cannot be a label's is left out. KubeVirt's
// kubevirt.io/realtime is read from the kernel, not from libvirt:
// RealtimeLabels gives it. Its cross-architecture
// kubevirt.io/vm-arch-<arch> (behind a feature gate) is not written.
func NodeLabels(f convert.HostFacts) map[string]string {
	out := map[string]string{}
	add := func(prefix string, names ...string) {
		for _, n := range names {
			if key := prefix + n; n != "" && len(validation.IsQualifiedName(key)) == 0 {
				out[key] = "true"
			}
		}
	}
	obsolete := map[string]bool{}
	for _, m := range ObsoleteCPUModels {
		obsolete[m] = true
	}
	for _, m := range f.CPUModels {
		if !obsolete[m] {
			add(v1.CPUModelLabel, m)
		}
	}
	for _, m := range f.KnownCPUModels {
		if !obsolete[m] {
			add(v1.SupportedHostModelMigrationCPU, m)
		}
	}
	add(v1.CPUFeatureLabel, f.CPUFeatures...)
	if hm := f.HostModel; hm != nil {
		add(v1.HostModelCPULabel, hm.Model)
		add(v1.CPUModelVendorLabel, hm.Vendor)
		add(v1.HostModelRequiredFeaturesLabel, hm.Features...)
		if obsolete[hm.Model] {
			out[v1.NodeHostModelIsObsoleteLabel] = "true"
		}
	}
	add(v1.SupportedMachineTypeLabel, f.MachineTypes...)
	add(v1.HypervLabel, HypervLabels(f)...)
	if t := f.TSC; t != nil {
		out[TSCFrequencyLabel] = strconv.FormatUint(t.Frequency, 10)
		out[TSCScalableLabel] = strconv.FormatBool(t.Scalable)
	}
	for _, form := range f.LaunchSecurity {
		if label, ok := launchSecurityLabels[form]; ok {
			out[label] = "true"
		}
	}
	return out
}

// TSCFrequencyLabel and TSCScalableLabel are the node labels of the host's
// TSC counter (KubeVirt's, read by its virt-controller's topology hints).
const (
	TSCFrequencyLabel = v1.CPUTimerLabel + "tsc-frequency"
	TSCScalableLabel  = v1.CPUTimerLabel + "tsc-scalable"
)

// launchSecurityLabels are the node labels of the confidential-computing
// forms of HostFacts.LaunchSecurity.
var launchSecurityLabels = map[string]string{
	"sev":     v1.SEVLabel,
	"sev-es":  v1.SEVESLabel,
	"sev-snp": v1.SEVSNPLabel,
	"tdx":     v1.TDXLabel,
	"s390-pv": v1.SecureExecutionLabel,
}

// hypervLabelNames maps libvirt's names of the Hyper-V enlightenments that
// need the host's KVM (its domain capabilities' <hyperv> enum) to the names
// of KubeVirt's hyperv.node.kubevirt.io labels, which its node labeller
// reads from /dev/kvm (KVM_CHECK_EXTENSION and the MSRs KVM lists) and its
// virt-controller selects for a VMI's spec.domain.features.hyperv.
// libvirt's relaxed, vapic, spinlocks and vendor_id need nothing of KVM
// (QEMU gives them under TCG too) and KubeVirt has no label of them.
var hypervLabelNames = map[string]string{
	"vpindex":         "vpindex",
	"runtime":         "runtime",
	"reset":           "reset",
	"synic":           "synic",
	"stimer":          "synictimer",
	"frequencies":     "frequencies",
	"reenlightenment": "reenlightenment",
	"tlbflush":        "tlbflush",
	"ipi":             "ipi",
}

// HypervLabels are the names of the hyperv.node.kubevirt.io labels of the
// host's facts, sorted: none but on KVM (DomainType "kvm"; KubeVirt's node
// labeller, which cannot open /dev/kvm without it, writes none either);
// there "base" (KubeVirt's KVM_CAP_HYPERV, which a KVM whose libvirt
// offers Hyper-V at all has) and the label of each enlightenment of
// HostFacts.Hyperv that hypervLabelNames maps. KubeVirt's "time" and
// "synic2" (KVM_CAP_HYPERV_TIME and _SYNIC2) have no counterpart in
// libvirt's list and are not written; no selector of KubeVirt's reads them.
func HypervLabels(f convert.HostFacts) []string {
	if f.DomainType != "kvm" || len(f.Hyperv) == 0 {
		return nil
	}
	out := []string{"base"}
	for _, name := range f.Hyperv {
		if l, ok := hypervLabelNames[name]; ok && !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}
