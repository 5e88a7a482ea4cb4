package api

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
)

// A Document is one decoded document: the VirtualMachineInstance it gives
// and the kind it was written as, so that problems found later on the VMI
// (by Validate, by the converter) can be shown at their place in what the
// user wrote.
type Document struct {
	// Kind is KindVMI or KindVM.
	Kind string
	// VMI is the document's VirtualMachineInstance: the VMI itself, or the
	// one a VirtualMachine's template makes (see Decode).
	VMI *v1.VirtualMachineInstance
}

// DecodeDocument is Decode that keeps the document's kind. Its errors are
// Decode's; the Document of a document that does not decode has no VMI
// (and its Kind when the decoder got that far).
func DecodeDocument(data []byte) (Document, error) {
	vmi, kind, err := decode(data)
	if ie, ok := err.(*InvalidError); ok {
		ie.Kind = kind
	}
	return Document{Kind: kind, VMI: vmi}, err
}

// Path returns where a field of the VMI, given by its path as Validate and
// the converter report it (spec.domain.devices.disks[0].bus), is in the
// document: for a VirtualMachine, spec.* is under spec.template.spec and
// metadata.labels and metadata.annotations are under
// spec.template.metadata (the name and namespace are the VM's own).
func (d Document) Path(vmiPath string) string {
	if d.Kind != KindVM {
		return vmiPath
	}
	for _, prefix := range []string{"spec", "metadata.labels", "metadata.annotations"} {
		if vmiPath == prefix || strings.HasPrefix(vmiPath, prefix+".") || strings.HasPrefix(vmiPath, prefix+"[") {
			return "spec.template." + vmiPath
		}
	}
	return vmiPath
}

// FieldErrors returns errs, field errors of the VMI, at their paths in the
// document (Path): errs itself for a VMI document, copies for a
// VirtualMachine.
func (d Document) FieldErrors(errs field.ErrorList) field.ErrorList {
	if d.Kind != KindVM || len(errs) == 0 {
		return errs
	}
	out := make(field.ErrorList, len(errs))
	for i, e := range errs {
		c := *e
		c.Field = d.Path(e.Field)
		out[i] = &c
	}
	return out
}

// Invalid is the *InvalidError of a stage that refused the document's VMI
// for errs (field errors of the VMI): the document's kind, errs at their
// paths in the document.
func (d Document) Invalid(stage string, errs field.ErrorList) *InvalidError {
	return &InvalidError{Kind: d.Kind, Stage: stage, Errors: d.FieldErrors(errs)}
}
