package pipeline_test

import (
	"errors"
	"fmt"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

// ExampleFromDocument converts a VirtualMachine's template for KubeVirt's
// pod layout, then shows what a caller gets for a document it refuses:
// every problem, each at its path in the VirtualMachine.
func ExampleFromDocument() {
	cfg := pipeline.Config{Options: convert.KubeVirtOptions()}
	r, err := pipeline.FromDocument([]byte(`
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: small
spec:
  runStrategy: Always
  template:
    spec:
      domain:
        memory:
          guest: 128Mi
        devices: {}
`), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Kind, r.Domain.Name, r.Domain.Memory.Value, r.Domain.Memory.Unit)

	_, err = pipeline.FromDocument([]byte(`
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: broken
spec:
  runStrategy: Always
  template:
    spec:
      domain:
        memory:
          guest: 128Mi
        devices:
          disks:
          - name: root
            disk: {bus: floppy}
`), cfg)
	var invalid *pipeline.InvalidError
	if errors.As(err, &invalid) {
		fmt.Println(errors.Is(err, pipeline.ErrInvalid), invalid.Stage)
		for _, fe := range invalid.Errors {
			fmt.Printf("%s: %s\n", fe.Field, fe.Type)
		}
	}
	// Output:
	// VirtualMachine default_small 134217728 b
	// true validate
	// spec.template.spec.domain.devices.disks[0].disk.bus: Unsupported value
	// spec.template.spec.domain.devices.disks[0].name: Invalid value
}
