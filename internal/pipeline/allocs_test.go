package pipeline_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/internal/pipeline"
)

// allocBounds are the most allocations each stage may make per sample of
// examples/vmis, and the most bytes convert may allocate: what they were
// when the bounds were set, plus a margin of a few. Allocations and
// bytes are deterministic where times are not, so a stage that starts
// allocating more fails here; a bound may be lowered when a stage gets
// cheaper. Convert's bytes are pinned as well as its allocations: with a
// dozen allocations left, bytes are what the garbage collector charges.
var allocBounds = map[string]struct{ decode, validate, convert, marshal, run, convertBytes int }{
	"vm-fedora":               {49, 35, 18, 2, 118, 9584},
	"vmi-cirros":              {30, 25, 15, 2, 92, 8056},
	"vmi-dedicated-hugepages": {41, 30, 25, 2, 116, 9216},
	"vmi-efi-secureboot":      {32, 26, 18, 2, 94, 8440},
	"vmi-fedora-cloudinit":    {52, 47, 17, 2, 132, 10144},
	"vmi-hostdisk":            {28, 33, 17, 2, 98, 9296},
	"vmi-iothreads":           {35, 38, 17, 2, 109, 10128},
	"vmi-kernel-boot":         {23, 20, 10, 2, 72, 6528},
	"vmi-multus-bridge":       {32, 30, 18, 2, 97, 9000},
	"vmi-pvc-datavolume":      {31, 37, 13, 2, 100, 8632},
	"vmi-tiny":                {26, 19, 6, 2, 69, 6184},
	"vmi-windows":             {79, 51, 29, 4, 175, 13168},
}

// TestAllocsPerStage pins the allocations of each stage of the pipeline
// (decode, validate, convert, marshal, and Run as a whole) and the bytes
// convert allocates, for every sample, as upper bounds (allocBounds).
func TestAllocsPerStage(t *testing.T) {
	opts := convert.KubeVirtOptions()
	for _, s := range samples(t) {
		bound, ok := allocBounds[s.name]
		if !ok {
			t.Errorf("%s: no allocation bounds: add the sample to allocBounds", s.name)
			continue
		}
		vmi, err := pipeline.Prepare(s.data, api.ClusterConfig{})
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		d, err := convert.Convert(vmi, opts)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		stages := []struct {
			name  string
			bound int
			run   func()
		}{
			{"decode", bound.decode, func() { must(t, decodeOnly(s.data)) }},
			{"validate", bound.validate, func() {
				if errs := api.Validate(vmi); len(errs) > 0 {
					t.Fatal(errs)
				}
			}},
			{"convert", bound.convert, func() { _, err := convert.Convert(vmi, opts); must(t, err) }},
			{"marshal", bound.marshal, func() { _, err := domain.Marshal(d); must(t, err) }},
			{"run", bound.run, func() { _, err := pipeline.Run(s.data, api.ClusterConfig{}, opts); must(t, err) }},
		}
		var got []string
		for _, st := range stages {
			n := int(testing.AllocsPerRun(20, st.run))
			got = append(got, fmt.Sprint(n))
			if n > st.bound {
				t.Errorf("%s: %s makes %d allocations, more than its bound %d", s.name, st.name, n, st.bound)
			}
		}
		b := bytesPerRun(20, func() { _, err := convert.Convert(vmi, opts); must(t, err) })
		if b > bound.convertBytes {
			t.Errorf("%s: convert allocates %d bytes, more than its bound %d", s.name, b, bound.convertBytes)
		}
		t.Logf("%s: allocations %v, convert bytes %d", s.name, got, b)
	}
}

// bytesPerRun is testing.AllocsPerRun for bytes: the bytes f allocates
// on average over runs calls, after one call to warm up, on one
// processor.
func bytesPerRun(runs int, f func()) int {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	f()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return int((after.TotalAlloc - before.TotalAlloc) / uint64(runs))
}

func decodeOnly(data []byte) error {
	_, err := api.DecodeDocument(data)
	return err
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
