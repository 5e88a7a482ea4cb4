package hostcaps_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/hostcaps"
)

// TestNodeLabels checks the node labels of each testdata case's facts
// against its labels.json (checked by hand against facts.json and
// KubeVirt's node labeller when written; -update rewrites them).
func TestNodeLabels(t *testing.T) {
	dirs, _ := filepath.Glob("testdata/*")
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			facts, err := hostcaps.Facts(readCase(t, dir))
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(hostcaps.NodeLabels(facts), "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			checkGolden(t, filepath.Join(dir, "labels.json"), got)
		})
	}
}

// Obsolete models are left out, an obsolete host-model CPU is marked so,
// and names that cannot be labels' are skipped.
func TestNodeLabelsFilter(t *testing.T) {
	got := hostcaps.NodeLabels(convert.HostFacts{
		CPUModels:    []string{"Penryn", "qemu64", "486", "bad model"},
		CPUFeatures:  []string{"sse2", "fxsr_opt"},
		HostModel:    &convert.HostModelCPU{Model: "kvm64", Vendor: "AMD", Features: []string{"svm"}},
		MachineTypes: []string{"q35", "pc-q35-7.2"},
	})
	want := map[string]string{
		"cpu-model.node.kubevirt.io/Penryn":                 "true",
		"cpu-feature.node.kubevirt.io/sse2":                 "true",
		"cpu-feature.node.kubevirt.io/fxsr_opt":             "true",
		"host-model-cpu.node.kubevirt.io/kvm64":             "true",
		"cpu-vendor.node.kubevirt.io/AMD":                   "true",
		"host-model-required-features.node.kubevirt.io/svm": "true",
		"node-labeller.kubevirt.io/obsolete-host-model":     "true",
		"machine-type.node.kubevirt.io/q35":                 "true",
		"machine-type.node.kubevirt.io/pc-q35-7.2":          "true",
	}
	if len(got) != len(want) {
		t.Errorf("got %d labels, want %d: %v", len(got), len(want), got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
}

// This host (TCG, no KVM) can have none of KubeVirt's labels of KVM's
// Hyper-V enlightenments, of the TSC counter or of SEV: its libvirt offers
// Hyper-V only as QEMU emulates it without KVM (spinlocks, vendor_id: no
// label), reports no TSC counter and no SEV. The hand-written KVM host with
// SEV and a TSC counter gets each of them.
func TestNodeLabelsKVMOnly(t *testing.T) {
	kvmOnly := []string{
		"hyperv.node.kubevirt.io/base", "hyperv.node.kubevirt.io/vpindex", "hyperv.node.kubevirt.io/synictimer",
		"hyperv.node.kubevirt.io/tlbflush", "hyperv.node.kubevirt.io/frequencies", "hyperv.node.kubevirt.io/reenlightenment",
		hostcaps.TSCFrequencyLabel, hostcaps.TSCScalableLabel, "kubevirt.io/sev", "kubevirt.io/sev-es", "kubevirt.io/sev-snp",
	}
	labelsOf := func(dir string) map[string]string {
		facts, err := hostcaps.Facts(readCase(t, dir))
		if err != nil {
			t.Fatal(err)
		}
		return hostcaps.NodeLabels(facts)
	}
	here, kvm := labelsOf("testdata/debian12-emulated"), labelsOf("testdata/libvirt-docs-kvm-sev-tsc")
	for _, l := range kvmOnly {
		if v, ok := here[l]; ok {
			t.Errorf("this TCG host has %s=%s", l, v)
		}
		if _, ok := kvm[l]; !ok {
			t.Errorf("the KVM host lacks %s", l)
		}
	}
	if kvm[hostcaps.TSCFrequencyLabel] != "2994374000" || kvm[hostcaps.TSCScalableLabel] != "true" {
		t.Errorf("TSC labels %q %q", kvm[hostcaps.TSCFrequencyLabel], kvm[hostcaps.TSCScalableLabel])
	}
	// The same KVM facts under TCG: no Hyper-V labels, as KubeVirt's
	// labeller without /dev/kvm.
	facts, _ := hostcaps.Facts(readCase(t, "testdata/libvirt-docs-kvm-sev-tsc"))
	facts.DomainType = "qemu"
	if got := hostcaps.HypervLabels(facts); got != nil {
		t.Errorf("Hyper-V labels under TCG: %v", got)
	}
}

// SEV without room for encrypted-state guests is SEV alone; SEV-SNP needs
// SEV-ES.
func TestNodeLabelsSEVForms(t *testing.T) {
	docs := readCase(t, "testdata/libvirt-docs-kvm-sev-tsc")
	docs.DomainCapabilities = bytes.Replace(docs.DomainCapabilities, []byte("<maxESGuests>15</maxESGuests>"), []byte("<maxESGuests>0</maxESGuests>"), 1)
	facts, err := hostcaps.Facts(docs)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(facts.LaunchSecurity, []string{"sev"}) {
		t.Errorf("LaunchSecurity %v, want [sev]", facts.LaunchSecurity)
	}
}
