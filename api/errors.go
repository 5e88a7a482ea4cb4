package api

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DecodeError is the error Decode returns for input it cannot turn into a
// VirtualMachineInstance. Problems of the document as a whole (empty input,
// bad YAML syntax, several documents) are in Msg; problems at a place in the
// document (unknown or duplicate fields, values of the wrong type, wrong
// kind or apiVersion) are in Errs, each with the path a user finds in their
// YAML, e.g. spec.domain.devices.disks[0].dsk.
type DecodeError struct {
	// Msg describes a problem of the whole document; empty when Errs is set.
	Msg string
	// Errs lists problems at a field path, in document order.
	Errs field.ErrorList
}

// Error prints Msg, or each field error as "path: detail" joined by "; ".
func (e *DecodeError) Error() string {
	if len(e.Errs) == 0 {
		return e.Msg
	}
	var b strings.Builder
	for i, fe := range e.Errs {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(decodeErrorLine(fe))
	}
	return b.String()
}

// Unwrap returns each field error (none for a problem of the whole
// document), so that errors.As finds a *field.Error.
func (e *DecodeError) Unwrap() []error {
	if len(e.Errs) == 0 {
		return nil
	}
	out := make([]error, len(e.Errs))
	for i, fe := range e.Errs {
		out[i] = fe
	}
	return out
}

// decodeErrorLine prints one field error of decoding. Unknown and duplicate
// fields read "path: unknown field" / "path: duplicate field"; the others
// use field.Error's own wording.
func decodeErrorLine(fe *field.Error) string {
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

func docError(msg string) *DecodeError { return &DecodeError{Msg: msg} }

func fieldErrors(errs ...*field.Error) *DecodeError { return &DecodeError{Errs: errs} }
