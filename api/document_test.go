package api

import (
	"errors"
	"testing"
)

func TestDocumentPath(t *testing.T) {
	cases := []struct{ kind, path, want string }{
		{KindVMI, "spec.domain.cpu", "spec.domain.cpu"},
		{KindVM, "spec.domain.cpu", "spec.template.spec.domain.cpu"},
		{KindVM, "spec", "spec.template.spec"},
		{KindVM, "spec.volumes[0].name", "spec.template.spec.volumes[0].name"},
		{KindVM, "metadata.labels[kubevirt.io/nodeName]", "spec.template.metadata.labels[kubevirt.io/nodeName]"},
		{KindVM, "metadata.annotations", "spec.template.metadata.annotations"},
		{KindVM, "metadata.name", "metadata.name"},
		{KindVM, "specification", "specification"},
	}
	for _, c := range cases {
		if got := (Document{Kind: c.kind}).Path(c.path); got != c.want {
			t.Errorf("Document{Kind: %s}.Path(%s) = %s, want %s", c.kind, c.path, got, c.want)
		}
	}
}

// TestDocumentFieldErrors checks that Validate's errors on a VMI decoded
// from a VirtualMachine can be shown at their place in the VM document.
func TestDocumentFieldErrors(t *testing.T) {
	doc, err := DecodeDocument([]byte(`apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: vm}
spec:
  runStrategy: Always
  template:
    spec:
      domain:
        devices:
          disks:
          - name: root
            disk: {bus: ide}
        memory: {guest: 1Gi}
      volumes:
      - name: root
        containerDisk: {image: img}
`))
	if err != nil || doc.Kind != KindVM || doc.VMI == nil {
		t.Fatalf("kind %q, VMI %v, err %v", doc.Kind, doc.VMI, err)
	}
	Default(doc.VMI, ClusterConfig{})
	errs := Validate(doc.VMI)
	in := doc.FieldErrors(errs)
	if len(in) != 1 || in[0].Field != "spec.template.spec.domain.devices.disks[0].disk.bus" {
		t.Fatalf("got %v", in)
	}
	if errs[0].Field != "spec.domain.devices.disks[0].disk.bus" {
		t.Errorf("FieldErrors changed its input: %v", errs)
	}
	ie := doc.Invalid(StageValidate, errs)
	if ie.Kind != KindVM || ie.Stage != StageValidate || len(ie.Errors) != 1 || ie.Errors[0] != in[0] && ie.Errors[0].Field != in[0].Field {
		t.Errorf("Invalid gives %+v", ie)
	}
	if !errors.Is(ie, ErrInvalid) || ie.Error() != in.ToAggregate().Error() {
		t.Errorf("Invalid's error %q (Is ErrInvalid %t), want %q", ie, errors.Is(ie, ErrInvalid), in.ToAggregate())
	}
}

// TestDecodeDocumentKindOfRefused: a document that does not decode gives
// no VMI; the error is the decoder's, of stage decode.
func TestDecodeDocumentKindOfRefused(t *testing.T) {
	doc, err := DecodeDocument([]byte("apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: vm}\nspec: {}\n"))
	var ie *InvalidError
	if !errors.As(err, &ie) || ie.Stage != StageDecode || doc.VMI != nil {
		t.Fatalf("got %+v, %v", doc, err)
	}
	if ie.Kind != doc.Kind {
		t.Errorf("the error's kind %q, the document's %q", ie.Kind, doc.Kind)
	}
}
