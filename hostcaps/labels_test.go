package hostcaps_test

import (
	"encoding/json"
	"path/filepath"
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
