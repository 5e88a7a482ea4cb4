package api

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestDecodeReportsEveryProblem: a document with two unknown fields and
// three values of the wrong type (two in one list) gets all five, each
// with its path (unknown fields first, as found in the document, then the
// values, in the order of their keys), and errors.As finds each
// *field.Error. Messages written by hand from the rules of decode*.go.
func TestDecodeReportsEveryProblem(t *testing.T) {
	in := vmiHeader + `spec:
  hostname: {a: b}
  domain:
    cpu:
      cores: two
      sockts: 1
    devices:
      disks:
      - name: a
        bootOrder: first
      - name: b
        bootOrder: second
  zeta: 1
`
	_, err := Decode([]byte(in))
	want := []string{
		"spec.domain.cpu.sockts: unknown field",
		"spec.zeta: unknown field",
		"spec.domain.cpu.cores: cannot decode string as a non-negative integer (uint32)",
		"spec.domain.devices.disks[0].bootOrder: cannot decode string as a non-negative integer (uint)",
		"spec.domain.devices.disks[1].bootOrder: cannot decode string as a non-negative integer (uint)",
		"spec.hostname: cannot decode object as a string",
	}
	var de *InvalidError
	if !errors.As(err, &de) || de.Stage != StageDecode {
		t.Fatalf("want an *InvalidError, got %T %v", err, err)
	}
	if len(de.Errors) != len(want) {
		t.Fatalf("got %d errors, want %d: %v", len(de.Errors), len(want), err)
	}
	for i, fe := range de.Errors {
		if got := decodeLine(fe); got != want[i] {
			t.Errorf("error %d: got %q, want %q", i, got, want[i])
		}
	}
	var fe *field.Error
	if !errors.As(err, &fe) || fe != de.Errors[0] {
		t.Errorf("errors.As(*field.Error) = %v, want the first field error", fe)
	}
	if n := len(de.Unwrap()); n != len(want) {
		t.Errorf("Unwrap gives %d errors, want %d", n, len(want))
	}
}

// TestDecodeErrorOfDocumentUnwrapsToNothing: a problem of the whole
// document has no field error to unwrap.
func TestDecodeErrorOfDocumentUnwrapsToNothing(t *testing.T) {
	_, err := Decode(nil)
	var fe *field.Error
	if errors.As(err, &fe) {
		t.Errorf("empty document: errors.As found %v", fe)
	}
}
