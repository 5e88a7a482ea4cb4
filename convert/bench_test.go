package convert_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

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

// BenchmarkOutputFloor measures the least a conversion that returns a
// *libvirtxml.Domain can cost, per sample VMI: one allocation as large as
// the structs and slices the sample's domain reaches (outputBytes), with
// no conversion at all. Convert cannot beat it whatever it does; the
// distance between the two is what is left to gain while the output is a
// libvirtxml.Domain (README, "Performance").
func BenchmarkOutputFloor(b *testing.B) {
	opts := convert.KubeVirtOptions()
	for _, s := range loadSamples(b) {
		d, err := convert.Convert(s.vmi, opts)
		if err != nil {
			b.Fatal(err)
		}
		words := outputBytes(reflect.ValueOf(d), map[uintptr]bool{}) / ptrSize
		b.Run(s.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				// Pointers, as the domain's structs hold pointers: the
				// collector treats the block as it treats them.
				floorSink = make([]unsafe.Pointer, words)
			}
		})
	}
}

// floorSink keeps BenchmarkOutputFloor's allocations on the heap.
var floorSink []unsafe.Pointer

const ptrSize = int(unsafe.Sizeof(uintptr(0)))

// outputBytes is the size of what v points to, followed through pointers
// (each counted once) and slices (their length, not their capacity):
// the memory a domain must own. Strings are not counted, as most of the
// converter's are constants.
func outputBytes(v reflect.Value, seen map[uintptr]bool) int {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return 0
		}
		seen[v.Pointer()] = true
		return int(v.Type().Elem().Size()) + outputBytes(v.Elem(), seen)
	case reflect.Slice:
		n := v.Len() * int(v.Type().Elem().Size())
		for i := range v.Len() {
			n += outputBytes(v.Index(i), seen)
		}
		return n
	case reflect.Struct:
		n := 0
		for i := range v.NumField() {
			n += outputBytes(v.Field(i), seen)
		}
		return n
	}
	return 0
}

// TestOutputBytes checks outputBytes against a domain whose size is known
// by hand: the Domain, its device list, and two disks, one with a source.
func TestOutputBytes(t *testing.T) {
	src := &libvirtxml.DomainDiskSource{}
	d := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{
		Disks: []libvirtxml.DomainDisk{{Source: src}, {Source: src}},
	}}
	want := int(unsafe.Sizeof(libvirtxml.Domain{})) + int(unsafe.Sizeof(libvirtxml.DomainDeviceList{})) +
		2*int(unsafe.Sizeof(libvirtxml.DomainDisk{})) + int(unsafe.Sizeof(libvirtxml.DomainDiskSource{}))
	if got := outputBytes(reflect.ValueOf(d), map[uintptr]bool{}); got != want {
		t.Errorf("outputBytes = %d, want %d (the shared source counted once)", got, want)
	}
}
