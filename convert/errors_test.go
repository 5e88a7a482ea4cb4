package convert_test

import (
	"errors"
	"os"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/internal/pipeline"
)

// TestConvertReportsEveryProblem: a VMI with three problems in three areas
// (a hostDisk outside the allowed folders, an unmapped multus network, a
// GPU without a host address) gets one *api.InvalidError of stage convert
// with the three field errors in the order of the areas, each found by
// errors.As.
func TestConvertReportsEveryProblem(t *testing.T) {
	data, err := os.ReadFile("testdata/refuse-err-three-problems/vmi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	vmi, err := pipeline.Prepare(data, api.ClusterConfig{})
	if err != nil {
		t.Fatal(err)
	}
	opts := convert.Options{Layout: convert.HostLayout{StateDir: "/s", ImageStore: "/i", HostDiskAllow: []string{"/srv/vms"}}}
	_, err = convert.Convert(vmi, opts)
	var ce *api.InvalidError
	if !errors.As(err, &ce) || ce.Stage != api.StageConvert || ce.Kind != api.KindVMI || !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("want an *api.InvalidError of a VMI at stage convert, got %T %v", err, err)
	}
	want := []string{"spec.volumes[0].hostDisk.path", "spec.networks[1].multus.networkName", "spec.domain.devices.gpus[0]"}
	if len(ce.Errors) != len(want) {
		t.Fatalf("want %d field errors, got %d: %v", len(want), len(ce.Errors), err)
	}
	for i, fe := range ce.Errors {
		if fe.Field != want[i] || fe.Type != field.ErrorTypeInvalid {
			t.Errorf("error %d: got %s (%s), want %s (Invalid)", i, fe.Field, fe.Type, want[i])
		}
	}
	var fe *field.Error
	if !errors.As(err, &fe) || fe.Field != want[0] {
		t.Errorf("errors.As(*field.Error) = %v, want the first error, on %s", fe, want[0])
	}
	if got := len(ce.Unwrap()); got != 3 {
		t.Errorf("Unwrap gives %d errors, want 3", got)
	}
	if err.Error() != ce.Errors.ToAggregate().Error() {
		t.Errorf("message %q, want field.ErrorList's aggregate %q", err, ce.Errors.ToAggregate())
	}
}

// TestConvertOneProblemMessage: with one problem the message is that
// field error's own.
func TestConvertOneProblemMessage(t *testing.T) {
	fe := field.Invalid(field.NewPath("spec", "x"), "v", "bad")
	if got, want := (&api.InvalidError{Stage: api.StageConvert, Errors: field.ErrorList{fe}}).Error(), fe.Error(); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestConvertProgrammerErrors: a nil VMI or Layout is a plain error, not a
// problem of the VMI.
func TestConvertProgrammerErrors(t *testing.T) {
	var ce *api.InvalidError
	if _, err := convert.Convert(nil, convert.KubeVirtOptions()); err == nil || errors.As(err, &ce) {
		t.Errorf("nil VMI: got %v, want a plain error", err)
	}
}
