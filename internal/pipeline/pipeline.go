// Package pipeline holds the project's test fixtures of the pure pipeline:
// the invalid-VMI catalogue (testdata/invalid), run through the pipeline
// and through the converter without validation, and the pipeline's fuzz
// target. Prepare and Run are the public package
// github.com/vmi2libvirt/vmi2libvirt/pipeline with the arguments the golden
// tests, the benchmarks and kvbench pass; they add nothing to it. Only tests
// import this package; a case's options file is read by internal/fixtures.
package pipeline

import (
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

// Result is pipeline.Result.
type Result = pipeline.Result

// Prepare decodes, defaults and validates one document (no conversion).
// The VMI is returned even when validation fails.
func Prepare(data []byte, cluster api.ClusterConfig) (*v1.VirtualMachineInstance, error) {
	doc, err := api.DecodeDocument(data)
	if err != nil {
		return nil, err
	}
	api.Default(doc.VMI, cluster)
	if errs := api.Validate(doc.VMI); len(errs) > 0 {
		return doc.VMI, doc.Invalid(api.StageValidate, errs)
	}
	return doc.VMI, nil
}

// Convert is pipeline.FromDocument with cluster and opts.
func Convert(data []byte, cluster api.ClusterConfig, opts convert.Options) (Result, error) {
	return pipeline.FromDocument(data, pipeline.Config{Cluster: cluster, Options: opts})
}

// Run is Convert for callers that want only the domain's canonical XML.
func Run(data []byte, cluster api.ClusterConfig, opts convert.Options) ([]byte, error) {
	r, err := Convert(data, cluster, opts)
	return r.XML, err
}
