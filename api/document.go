package api

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
)

// DecodeDocument is Decode that also returns the kind of the document
// (KindVMI or KindVM), so that errors found later on the VMI can be shown
// at their place in that document with InDocument.
func DecodeDocument(data []byte) (*v1.VirtualMachineInstance, string, error) {
	return decode(data)
}

// DocumentPath returns where a field of a VMI, given by its path as
// Validate and convert report it (spec.domain.devices.disks[0].bus), is in
// a document of the given kind: for a VirtualMachine, spec.* is under
// spec.template.spec and metadata.labels and metadata.annotations are under
// spec.template.metadata (the name and namespace are the VM's own).
func DocumentPath(kind, path string) string {
	if kind != KindVM {
		return path
	}
	for _, prefix := range []string{"spec", "metadata.labels", "metadata.annotations"} {
		if path == prefix || strings.HasPrefix(path, prefix+".") || strings.HasPrefix(path, prefix+"[") {
			return "spec.template." + path
		}
	}
	return path
}

// InDocument returns copies of errs with their paths rewritten by
// DocumentPath for a document of the given kind.
func InDocument(kind string, errs field.ErrorList) field.ErrorList {
	if kind != KindVM || len(errs) == 0 {
		return errs
	}
	out := make(field.ErrorList, len(errs))
	for i, e := range errs {
		c := *e
		c.Field = DocumentPath(kind, e.Field)
		out[i] = &c
	}
	return out
}
