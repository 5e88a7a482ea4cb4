package crd_test

import (
	"bytes"
	"fmt"
	"log"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/crd"
)

// Generate reproduces the committed CRDs from kubevirt.io/api.
func ExampleGenerate() {
	files, err := crd.Generate()
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range crd.Definitions {
		var c extv1.CustomResourceDefinition
		if err := k8syaml.NewYAMLToJSONDecoder(bytes.NewReader(files[d.File()])).Decode(&c); err != nil {
			log.Fatal(err)
		}
		fmt.Println(c.Name, c.Spec.Scope, c.Spec.Names.ShortNames)
		for _, v := range c.Spec.Versions {
			fmt.Printf("  %s served=%t storage=%t columns=%d status=%t\n",
				v.Name, v.Served, v.Storage, len(v.AdditionalPrinterColumns), v.Subresources != nil && v.Subresources.Status != nil)
		}
	}
	// Output:
	// virtualmachineinstances.kubevirt.io Namespaced [vmi vmis]
	//   v1 served=true storage=true columns=7 status=false
	//   v1alpha3 served=true storage=false columns=7 status=false
	// virtualmachines.kubevirt.io Namespaced [vm vms]
	//   v1 served=true storage=true columns=3 status=true
	//   v1alpha3 served=true storage=false columns=3 status=true
	// virtualmachineinstancemigrations.kubevirt.io Namespaced [vmim vmims]
	//   v1 served=true storage=true columns=2 status=true
	//   v1alpha3 served=true storage=false columns=2 status=true
}
