package crd_test

import (
	"bytes"
	"fmt"
	"log"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/crd"
)

// Generate reproduces the committed CRD from kubevirt.io/api.
func ExampleGenerate() {
	data, err := crd.Generate()
	if err != nil {
		log.Fatal(err)
	}
	var c extv1.CustomResourceDefinition
	if err := k8syaml.NewYAMLToJSONDecoder(bytes.NewReader(data)).Decode(&c); err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Name, c.Spec.Scope, c.Spec.Names.ShortNames)
	for _, v := range c.Spec.Versions {
		fmt.Printf("%s served=%t storage=%t columns=%d subresources=%v\n",
			v.Name, v.Served, v.Storage, len(v.AdditionalPrinterColumns), v.Subresources)
	}
	// Output:
	// virtualmachineinstances.kubevirt.io Namespaced [vmi vmis]
	// v1 served=true storage=true columns=7 subresources=nil
	// v1alpha3 served=true storage=false columns=7 subresources=nil
}
