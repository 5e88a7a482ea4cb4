package admission

import (
	"context"
	"encoding/json"
	"errors"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/vmi2libvirt/vmi2libvirt/api"
)

// vmMutator gives a VM's template the defaults KubeVirt's VM mutator gives
// it (SetVirtualMachineDefaults): the architecture and the machine type,
// as api.Default gives them to a VMI. It does so when a VM is created and
// when its spec changes (not for a VM being deleted, nor for changes of
// its metadata alone). KubeVirt's also writes a random firmware UUID and
// serial into a new VM's template; here the VM controller gives the VMI
// the UUID derived from the VM's name (api.VMFirmwareUUID), which stays
// the same across restarts without being written, and no serial.
type vmMutator struct {
	cluster api.ClusterConfig
}

func (m *vmMutator) Handle(_ context.Context, req admission.Request) admission.Response {
	var vm v1.VirtualMachine
	if err := json.Unmarshal(req.Object.Raw, &vm); err != nil {
		return badRequest(err)
	}
	if vm.DeletionTimestamp != nil || vm.Spec.Template == nil {
		return admission.Allowed("")
	}
	if req.Operation == admissionv1.Update {
		var old v1.VirtualMachine
		if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
			return badRequest(err)
		}
		if equality.Semantic.DeepEqual(old.Spec, vm.Spec) {
			return admission.Allowed("")
		}
	}
	tpl := &vm.Spec.Template.Spec
	defaulted := &v1.VirtualMachineInstance{Spec: *tpl.DeepCopy()}
	defaulted.Name, defaulted.Namespace = vm.Name, vm.Namespace
	api.Default(defaulted, m.cluster)
	changed := false
	if tpl.Architecture == "" {
		tpl.Architecture, changed = defaulted.Spec.Architecture, true
	}
	if tpl.Domain.Machine == nil || tpl.Domain.Machine.Type == "" {
		tpl.Domain.Machine, changed = defaulted.Spec.Domain.Machine, true
	}
	if !changed {
		return admission.Allowed("")
	}
	return patched(req, &vm)
}

// vmValidator refuses a VM being created, or whose spec changes, that
// KubeVirt's VM admission would refuse: its run strategy (exactly one of
// spec.runStrategy and spec.running, a known strategy) and its template,
// checked as the VMI it makes — api.Decode, api.Default, then
// api.ValidateCreate, as the VMI webhooks will check it — each problem at
// its place in the VM (spec.template.spec.…, as pipeline.FromDocument
// reports a VM's).
type vmValidator struct {
	cluster api.ClusterConfig
}

func (v *vmValidator) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation == admissionv1.Update {
		var old, cur v1.VirtualMachine
		if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
			return badRequest(err)
		}
		if err := json.Unmarshal(req.Object.Raw, &cur); err != nil {
			return badRequest(err)
		}
		if cur.DeletionTimestamp != nil || equality.Semantic.DeepEqual(old.Spec, cur.Spec) {
			return admission.Allowed("")
		}
	}
	doc, err := api.DecodeDocument(req.Object.Raw)
	var decodeErr *api.InvalidError
	switch {
	case errors.As(err, &decodeErr) && len(decodeErr.Errors) > 0:
		return refused(decodeErr.Errors)
	case err != nil:
		return refused(field.ErrorList{field.Invalid(field.NewPath("spec"), nil, err.Error())})
	}
	api.Default(doc.VMI, v.cluster)
	if errs := doc.FieldErrors(api.ValidateCreate(doc.VMI)); len(errs) > 0 {
		return refused(errs)
	}
	return admission.Allowed("")
}
