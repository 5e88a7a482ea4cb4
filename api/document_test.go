package api

import (
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
		if got := DocumentPath(c.kind, c.path); got != c.want {
			t.Errorf("DocumentPath(%s, %s) = %s, want %s", c.kind, c.path, got, c.want)
		}
	}
}

// TestInDocument checks that Validate's errors on a VMI decoded from a
// VirtualMachine can be shown at their place in the VM document.
func TestInDocument(t *testing.T) {
	vmi, kind, err := DecodeDocument([]byte(`apiVersion: kubevirt.io/v1
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
	if err != nil || kind != KindVM {
		t.Fatalf("kind %q, err %v", kind, err)
	}
	Default(vmi, ClusterConfig{})
	errs := Validate(vmi)
	doc := InDocument(kind, errs)
	if len(doc) != 1 || doc[0].Field != "spec.template.spec.domain.devices.disks[0].disk.bus" {
		t.Fatalf("got %v", doc)
	}
	if errs[0].Field != "spec.domain.devices.disks[0].disk.bus" {
		t.Errorf("InDocument changed its input: %v", errs)
	}
}
