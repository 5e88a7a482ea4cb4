// Package pipeline is the whole pure path from a KubeVirt document, or a
// VirtualMachineInstance object, to libvirt domain XML, in one place:
//
//	api.Decode → api.Default → api.Validate → convert.Convert → domain.Marshal
//
// FromDocument starts from YAML or JSON bytes (a VirtualMachineInstance, or
// a VirtualMachine whose template becomes the VMI); FromVMI starts from an
// object, such as one a controller read from the API server. Both return
// every stage's result and, for input that cannot become a domain, an
// *InvalidError listing every problem the refusing stage found, each at
// the path of its field in the document the user wrote
// (spec.template.spec.… for a VirtualMachine). The stages run in order and
// the first that refuses ends the run: the converter is given only valid
// VMIs, so a VMI refused by validation reports validation's problems, and
// one it accepts reports every problem of the conversion at once.
// The commands of examples/, the launcher and the project's tests all go
// through here.
//
// The package is pure, like the packages it chains: no file, no clock, no
// randomness; the same input and Config give the same bytes.
package pipeline

import (
	"errors"
	"fmt"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

// Config is what shapes the result besides the input.
type Config struct {
	// Cluster holds the cluster-level choices api.Default applies.
	Cluster api.ClusterConfig
	// Options are the converter's host facts and layout; Options.Layout is
	// required (convert.KubeVirtOptions gives KubeVirt's).
	Options convert.Options
	// Create also applies the rules KubeVirt applies only when a VMI is
	// created (api.ValidateCreate): for a document about to be created,
	// not for an object the API server already admitted.
	Create bool
}

// Result is what the pipeline made of one input. Fields of the stages that
// did not run are nil.
type Result struct {
	// Kind is the kind of the document: api.KindVMI or api.KindVM
	// (api.KindVMI for FromVMI).
	Kind string
	// VMI is the decoded, defaulted VMI (for FromVMI, a defaulted copy).
	VMI *v1.VirtualMachineInstance
	// Domain is the converted domain, XML its canonical XML
	// (domain.Marshal).
	Domain *libvirtxml.Domain
	XML    []byte
}

// FromDocument decodes one document, defaults, validates and converts its
// VMI, and marshals the domain. An error for the input is an
// *InvalidError; a Config without a layout, or a domain libvirtxml cannot
// marshal, is another error.
func FromDocument(data []byte, cfg Config) (Result, error) {
	doc, err := api.DecodeDocument(data)
	if err != nil {
		return Result{Kind: doc.Kind}, err
	}
	return run(doc, cfg)
}

// FromVMI defaults (a copy of) vmi, validates and converts it, and marshals
// the domain. vmi itself is not modified. Errors are FromDocument's.
func FromVMI(vmi *v1.VirtualMachineInstance, cfg Config) (Result, error) {
	if vmi == nil {
		return Result{}, errors.New("pipeline: nil VirtualMachineInstance")
	}
	return run(api.Document{Kind: api.KindVMI, VMI: vmi.DeepCopy()}, cfg)
}

// Admit is the first half of FromVMI: KubeVirt's defaults on a copy of vmi,
// then validation (ValidateCreate's rules too when cfg.Create is set). It
// returns the defaulted VMI, or an *InvalidError of stage "validate". A
// caller that must resolve something the VMI names before it converts it —
// the launcher pulls its images — admits it first and converts it with
// Convert: one run of the pipeline, split in two.
func Admit(vmi *v1.VirtualMachineInstance, cfg Config) (*v1.VirtualMachineInstance, error) {
	if vmi == nil {
		return nil, errors.New("pipeline: nil VirtualMachineInstance")
	}
	doc := api.Document{Kind: api.KindVMI, VMI: vmi.DeepCopy()}
	return doc.VMI, admit(doc, cfg)
}

// Convert is the second half of FromVMI: it converts vmi, which Admit
// returned, with cfg.Options, and returns the domain before it is marshalled
// (domain.Marshal). A VMI the converter refuses is an *InvalidError of stage
// "convert"; vmi is not modified.
func Convert(vmi *v1.VirtualMachineInstance, cfg Config) (*libvirtxml.Domain, error) {
	return convertDoc(api.Document{Kind: api.KindVMI, VMI: vmi}, cfg)
}

// run defaults, validates, converts and marshals the document's VMI, which
// it owns.
func run(doc api.Document, cfg Config) (Result, error) {
	r := Result{Kind: doc.Kind, VMI: doc.VMI}
	if err := admit(doc, cfg); err != nil {
		return r, err
	}
	d, err := convertDoc(doc, cfg)
	if err != nil {
		return r, err
	}
	r.Domain = d
	xml, err := domain.Marshal(d)
	if err != nil {
		return r, fmt.Errorf("pipeline: marshal: %w", err)
	}
	r.XML = xml
	return r, nil
}

// admit defaults and validates the document's VMI, which it owns.
func admit(doc api.Document, cfg Config) error {
	api.Default(doc.VMI, cfg.Cluster)
	validate := api.Validate
	if cfg.Create {
		validate = api.ValidateCreate
	}
	if errs := validate(doc.VMI); len(errs) > 0 {
		return doc.Invalid(api.StageValidate, errs)
	}
	return nil
}

// convertDoc converts the document's admitted VMI.
func convertDoc(doc api.Document, cfg Config) (*libvirtxml.Domain, error) {
	d, err := convert.Convert(doc.VMI, cfg.Options)
	if err != nil {
		var invalid *InvalidError
		if !errors.As(err, &invalid) {
			return nil, fmt.Errorf("pipeline: convert: %w", err) // not the input's fault
		}
		return nil, doc.Invalid(api.StageConvert, invalid.Errors)
	}
	return d, nil
}
