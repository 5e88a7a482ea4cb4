// Package pipeline is the whole pure path from a VMI document to domain XML,
// as examples/convert and the golden-file tests run it:
//
//	api.Decode → api.Default → api.Validate → convert.Convert → domain.Marshal
//
// Prepare, Convert and Run touch no file, no libvirt and no clock: the same
// bytes and options give the same XML. ParseOptions and LoadOptions read
// the options file of a test case.
package pipeline

import (
	"fmt"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

// Result is what the pipeline made of one document.
type Result struct {
	// VMI is the decoded, defaulted and validated VMI (nil when decoding
	// failed).
	VMI *v1.VirtualMachineInstance
	// Domain is the converted domain and XML its canonical XML (both nil
	// when a stage failed).
	Domain *libvirtxml.Domain
	XML    []byte
}

// Prepare decodes one VirtualMachineInstance (or VirtualMachine) document,
// applies KubeVirt's admission defaults with cluster and validates it. The
// VMI is returned even when validation fails; the validation errors come
// back as their aggregate (errs.ToAggregate()), with the paths of the
// document (api.InDocument: spec.template.spec.… for a VirtualMachine).
func Prepare(data []byte, cluster api.ClusterConfig) (*v1.VirtualMachineInstance, error) {
	vmi, _, err := prepare(data, cluster)
	return vmi, err
}

// prepare is Prepare, also returning the kind of the document.
func prepare(data []byte, cluster api.ClusterConfig) (*v1.VirtualMachineInstance, string, error) {
	vmi, kind, err := api.DecodeDocument(data)
	if err != nil {
		return nil, kind, err
	}
	api.Default(vmi, cluster)
	if errs := api.Validate(vmi); len(errs) > 0 {
		return vmi, kind, api.InDocument(kind, errs).ToAggregate()
	}
	return vmi, kind, nil
}

// Convert runs the whole pipeline and returns every stage's result.
//
// The error is the first failing stage's: a *api.DecodeError from Decode,
// the field.ErrorList of Validate as its aggregate (every error naming its
// field path), the *convert.Error or error of Convert, and a marshal failure
// prefixed with "marshal: ". Field paths are those of the document
// (api.InDocument). Its message is what the golden error.txt files and the
// invalid-VMI catalogue's .err files hold.
func Convert(data []byte, cluster api.ClusterConfig, opts convert.Options) (Result, error) {
	vmi, kind, err := prepare(data, cluster)
	if err != nil {
		return Result{VMI: vmi}, err
	}
	d, err := convert.Convert(vmi, opts)
	if err != nil {
		if ce, ok := err.(*convert.Error); ok {
			err = &convert.Error{Errs: api.InDocument(kind, ce.Errs)}
		}
		return Result{VMI: vmi}, err
	}
	xml, err := domain.Marshal(d)
	if err != nil {
		return Result{VMI: vmi}, fmt.Errorf("marshal: %w", err)
	}
	return Result{VMI: vmi, Domain: d, XML: xml}, nil
}

// Run is Convert for callers that want only the domain's canonical XML.
func Run(data []byte, cluster api.ClusterConfig, opts convert.Options) ([]byte, error) {
	r, err := Convert(data, cluster, opts)
	return r.XML, err
}
