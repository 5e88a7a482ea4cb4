package convert_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/internal/pipeline"
)

// benchVMI is one sample of examples/vmis, decoded, defaulted and validated.
type benchVMI struct {
	name string
	vmi  *v1.VirtualMachineInstance
}

// loadSamples prepares every sample VMI once, outside the benchmark timer.
func loadSamples(b *testing.B) []benchVMI {
	b.Helper()
	files, err := filepath.Glob("../examples/vmis/*.yaml")
	if err != nil || len(files) == 0 {
		b.Fatalf("no sample VMIs under ../examples/vmis (%v)", err)
	}
	var vmis []benchVMI
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			b.Fatal(err)
		}
		vmi, err := pipeline.Prepare(data, api.ClusterConfig{})
		if err != nil {
			b.Fatalf("%s: %v", file, err)
		}
		vmis = append(vmis, benchVMI{strings.TrimSuffix(filepath.Base(file), ".yaml"), vmi})
	}
	return vmis
}

// BenchmarkConvert measures Convert alone, per sample VMI, with KubeVirt's
// options.
func BenchmarkConvert(b *testing.B) {
	opts := convert.KubeVirtOptions()
	for _, s := range loadSamples(b) {
		b.Run(s.name, func(b *testing.B) {
			if _, err := convert.Convert(s.vmi, opts); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := convert.Convert(s.vmi, opts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkConvertMarshal measures Convert followed by domain.Marshal, per
// sample VMI: the cost of turning a ready VMI into domain XML.
func BenchmarkConvertMarshal(b *testing.B) {
	opts := convert.KubeVirtOptions()
	for _, s := range loadSamples(b) {
		b.Run(s.name, func(b *testing.B) {
			if _, err := convert.Convert(s.vmi, opts); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				d, err := convert.Convert(s.vmi, opts)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := domain.Marshal(d); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
