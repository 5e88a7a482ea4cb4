package pipeline_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/internal/pipeline"
)

// sample is one document of examples/vmis.
type sample struct {
	name string
	data []byte
}

// samples reads every sample document of examples/vmis.
func samples(tb testing.TB) []sample {
	tb.Helper()
	files, err := filepath.Glob("../../examples/vmis/*.yaml")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no sample VMIs under ../../examples/vmis (%v)", err)
	}
	var out []sample
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, sample{strings.TrimSuffix(filepath.Base(f), ".yaml"), data})
	}
	return out
}

// BenchmarkRun measures the whole pipeline, YAML bytes to domain XML, per
// sample document, with KubeVirt's options.
func BenchmarkRun(b *testing.B) {
	opts := convert.KubeVirtOptions()
	for _, s := range samples(b) {
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := pipeline.Run(s.data, api.ClusterConfig{}, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
