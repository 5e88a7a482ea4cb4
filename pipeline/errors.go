package pipeline

import (
	"errors"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/vmi2libvirt/vmi2libvirt/api"
)

// ErrInvalid is the condition of every *InvalidError: the input cannot
// become a domain as it is. Retrying the same input cannot help.
var ErrInvalid = errors.New("invalid VirtualMachineInstance")

// InvalidError is the error for input that cannot become a domain: a
// document that does not decode, a VMI that validation refuses, or one the
// converter cannot honour with the given options. errors.Is(err,
// ErrInvalid) holds; errors.As finds each *field.Error and the stage's own
// error (*api.DecodeError for a document that does not decode).
type InvalidError struct {
	// Kind is the kind of the document (api.KindVMI, api.KindVM, or "" when
	// it could not be read).
	Kind string
	// Stage is where the input was refused: "decode", "validate" or
	// "convert" (the launcher adds "artifacts", for what it cannot make on
	// the host for the VMI as it is, and "console" and "vnc", for a VMI
	// without the device a stream needs).
	Stage string
	// Errors are the problems at a field path, with the paths of the
	// document. It is empty for a document that is not one VMI or VM at
	// all (empty, not YAML...): Error then says what is wrong and where.
	Errors field.ErrorList
	// err is the stage's error, whose message Error returns; nil when the
	// error was made with Errors alone (Error then aggregates them).
	err error
}

// newInvalidError wraps the error a stage returned for the input.
func newInvalidError(kind, stage string, err error) *InvalidError {
	errs := fieldErrors(err)
	if kind == api.KindVM && stage == "convert" {
		errs = api.InDocument(kind, errs)
		err = errs.ToAggregate()
	}
	return &InvalidError{Kind: kind, Stage: stage, Errors: errs, err: err}
}

// Error is the stage's message: one field error, a list of them, or a
// problem of the whole document.
func (e *InvalidError) Error() string {
	if e.err == nil {
		if len(e.Errors) == 0 {
			return ErrInvalid.Error()
		}
		return e.Errors.ToAggregate().Error()
	}
	return e.err.Error()
}

// Is reports ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns the stage's error and each field error.
func (e *InvalidError) Unwrap() []error {
	var out []error
	if e.err != nil {
		out = append(out, e.err)
	}
	for _, fe := range e.Errors {
		out = append(out, fe)
	}
	return out
}
