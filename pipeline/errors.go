package pipeline

import (
	"github.com/vmi2libvirt/vmi2libvirt/api"
)

// ErrInvalid is api.ErrInvalid, the condition of every *InvalidError: the
// input cannot become a domain as it is. Retrying the same input cannot
// help.
var ErrInvalid = api.ErrInvalid

// InvalidError is api.InvalidError, the error for input that cannot become
// a domain: a document that does not decode, a VMI that validation
// refuses, or one the converter cannot honour with the given options. Its
// Kind is the document's, its Stage "decode", "validate" or "convert", and
// its Errors are at the paths of the document (spec.template.spec.… for a
// VirtualMachine). errors.Is(err, ErrInvalid) holds; errors.As finds each
// *field.Error.
type InvalidError = api.InvalidError
