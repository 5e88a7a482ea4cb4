// Package pipeline is the whole pure path from a VMI document to domain XML,
// as examples/convert and the golden-file tests run it:
//
//	api.Decode → api.Default → api.Validate → convert.Convert → domain.Marshal
//
// It touches no file, no libvirt and no clock: the same bytes and options
// give the same XML.
package pipeline

import (
	"fmt"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

// Run decodes one VirtualMachineInstance (or VirtualMachine) document,
// applies KubeVirt's admission defaults with cluster, validates it, converts
// it with opts and returns the domain's canonical XML (domain.Marshal).
//
// The error is the first failing stage's, as that stage returned it: a
// *api.DecodeError from Decode, the field.ErrorList of Validate as its
// aggregate (errs.ToAggregate(), every error naming its field path), the
// *field.Error or error of Convert, and a marshal failure prefixed with
// "marshal: ". Its message is what the invalid-VMI catalogue's .err files
// hold.
func Run(data []byte, cluster api.ClusterConfig, opts convert.Options) ([]byte, error) {
	vmi, err := api.Decode(data)
	if err != nil {
		return nil, err
	}
	api.Default(vmi, cluster)
	if errs := api.Validate(vmi); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	d, err := convert.Convert(vmi, opts)
	if err != nil {
		return nil, err
	}
	xml, err := domain.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("marshal: %w", err)
	}
	return xml, nil
}
