package hostcaps

import (
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
// with the value "true":
//
//	cpu-model.node.kubevirt.io/<model>     each usable named model (CPUModels) but the obsolete ones
//	                                       (ObsoleteCPUModels)
//	cpu-feature.node.kubevirt.io/<feature> each feature of CPUFeatures
//	host-model-cpu.node.kubevirt.io/<model>, cpu-vendor.node.kubevirt.io/<vendor>,
//	host-model-required-features.node.kubevirt.io/<feature>
//	                                       the host-model CPU, its vendor and the features it adds
//	node-labeller.kubevirt.io/obsolete-host-model  when the host-model CPU is obsolete
//	machine-type.node.kubevirt.io/<type>   each machine type (alias and canonical name)
//
// A name that cannot be a label's is left out. KubeVirt's labels of
// Hyper-V enlightenments, TSC frequency, SEV and realtime, and
// supported-host-model-migration-cpu, are not written.
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
	return out
}
