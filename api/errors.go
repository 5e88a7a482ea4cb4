package api

import (
	"errors"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ErrInvalid is the condition of every *InvalidError: the input cannot
// become a domain as it is. Retrying the same input cannot help.
var ErrInvalid = errors.New("invalid VirtualMachineInstance")

// The stages of the pure pipeline that refuse input, as InvalidError.Stage
// names them.
const (
	// StageDecode: Decode (and DecodeDocument) refused the document.
	StageDecode = "decode"
	// StageValidate: Validate (or ValidateCreate) refused the VMI.
	StageValidate = "validate"
	// StageConvert: the converter cannot honour the VMI with its options
	// (package convert).
	StageConvert = "convert"
)

// InvalidError is the one error shape for input that cannot become a
// domain, whichever stage refuses it: a document that does not decode, a
// VMI that validation refuses, one the converter cannot honour with its
// options (and, in the launcher, one whose artifacts or streams cannot be
// made as it is). It lists every problem the stage found; errors.Is(err,
// ErrInvalid) holds and errors.As finds each *field.Error.
type InvalidError struct {
	// Kind is the kind of the document the paths of Errors belong to
	// (KindVMI, KindVM, or "" when the document could not be read).
	Kind string
	// Stage is where the input was refused: StageDecode, StageValidate,
	// StageConvert (the launcher adds "artifacts", for what it cannot make
	// on the host for the VMI as it is, and "console" and "vnc", for a VMI
	// without the device a stream needs).
	Stage string
	// Errors are the problems at a field path, with the paths of the
	// document. It is empty for a document that is not one VMI or VM at
	// all (empty, not YAML...): Error then says what is wrong and where.
	Errors field.ErrorList
	// msg describes a problem of the whole document, when Errors is empty.
	msg string
}

// Error prints the problems in one line. A problem of the whole document
// is its message; the decoder's field errors are joined by "; ", each as
// "path: detail" for unknown, duplicate and mistyped fields (decodeLine);
// the other stages' read as field.ErrorList's aggregate: one error as
// itself, several as "[a, b, c]".
func (e *InvalidError) Error() string {
	switch {
	case len(e.Errors) == 0 && e.msg != "":
		return e.msg
	case len(e.Errors) == 0:
		return ErrInvalid.Error()
	case e.Stage == StageDecode:
		var b strings.Builder
		for i, fe := range e.Errors {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(decodeLine(fe))
		}
		return b.String()
	}
	return e.Errors.ToAggregate().Error()
}

// Is reports ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

// Unwrap returns each field error (none for a problem of the whole
// document), so that errors.As finds a *field.Error.
func (e *InvalidError) Unwrap() []error {
	if len(e.Errors) == 0 {
		return nil
	}
	out := make([]error, len(e.Errors))
	for i, fe := range e.Errors {
		out[i] = fe
	}
	return out
}

// decodeLine prints one field error of decoding. Unknown and duplicate
// fields read "path: unknown field" / "path: duplicate field"; the others
// use field.Error's own wording.
func decodeLine(fe *field.Error) string {
	switch fe.Type {
	case field.ErrorTypeDuplicate, field.ErrorTypeInvalid:
		if fe.Detail != "" {
			return fe.Field + ": " + fe.Detail
		}
	case field.ErrorTypeForbidden:
		if fe.Detail == unknownField {
			return fe.Field + ": " + fe.Detail
		}
	}
	return fe.Error()
}

// unknownField is the detail of the error for a field no type has.
const unknownField = "unknown field"

// docError is Decode's error for a problem of the whole document.
func docError(msg string) *InvalidError { return &InvalidError{Stage: StageDecode, msg: msg} }

// fieldErrors is Decode's error for problems at field paths.
func fieldErrors(errs ...*field.Error) *InvalidError {
	return &InvalidError{Stage: StageDecode, Errors: errs}
}
