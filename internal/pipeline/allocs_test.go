package pipeline_test

import (
	"fmt"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/internal/pipeline"
)

// allocBounds are the most allocations each stage may make per sample of
// examples/vmis: what it made when the bounds were set, plus a margin of
// about 5%. Allocation counts are deterministic where times are not, so a
// stage that starts allocating more fails here; a bound may be lowered
// when a stage gets cheaper.
var allocBounds = map[string]struct{ decode, validate, convert, marshal, run int }{
	"vm-fedora":               {177, 70, 104, 3, 366},
	"vmi-cirros":              {120, 57, 89, 3, 287},
	"vmi-dedicated-hugepages": {156, 63, 103, 3, 342},
	"vmi-efi-secureboot":      {120, 54, 94, 3, 285},
	"vmi-fedora-cloudinit":    {220, 81, 121, 3, 437},
	"vmi-hostdisk":            {134, 63, 102, 3, 319},
	"vmi-iothreads":           {170, 71, 123, 3, 382},
	"vmi-kernel-boot":         {98, 46, 69, 3, 230},
	"vmi-multus-bridge":       {147, 58, 103, 3, 325},
	"vmi-pvc-datavolume":      {141, 70, 94, 3, 323},
	"vmi-tiny":                {101, 45, 63, 3, 226},
	"vmi-windows":             {304, 87, 153, 5, 558},
}

// TestAllocsPerStage pins the allocations of each stage of the pipeline
// (decode, validate, convert, marshal, and Run as a whole) for
// every sample, as upper bounds (allocBounds).
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
		t.Logf("%s: %v", s.name, got)
	}
}

func decodeOnly(data []byte) error {
	_, _, err := api.DecodeDocument(data)
	return err
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
