package admission

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/google/uuid"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/vmi2libvirt/vmi2libvirt/api"
)

// LiveUpdate decides on a change of a VMI's spec, old to new, by one of
// Options.KubeVirtUsers: the problems it returns refuse the change (each
// on its field path); none lets it through. It is called only when the
// spec changed.
type LiveUpdate func(old, new *v1.VirtualMachineInstance) field.ErrorList

// RefuseSpecChanges is the LiveUpdate of a VMI whose spec never changes
// once it is created, not even by the control plane: the change is
// refused at spec, with KubeVirt's message to everyone else.
func RefuseSpecChanges(_, _ *v1.VirtualMachineInstance) field.ErrorList {
	return field.ErrorList{restricted}
}

// restricted is KubeVirt's refusal of a spec change by anyone but
// KubeVirt itself.
var restricted = field.Forbidden(field.NewPath("spec"), "update of VMI object is restricted")

// vmiMutator gives a VMI being created KubeVirt's admission defaults
// (api.Default), KubeVirt's foreground-deletion finalizer and the phase
// Pending, as KubeVirt's VMI mutator does on creation.
type vmiMutator struct {
	cluster api.ClusterConfig
	now     func() time.Time
}

func (m *vmiMutator) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	var vmi v1.VirtualMachineInstance
	if err := json.Unmarshal(req.Object.Raw, &vmi); err != nil {
		return badRequest(err)
	}
	// The name of an object created with generateName is chosen after
	// the mutating webhooks: its firmware UUID cannot be derived from it.
	// It gets a random one, as every VMI does in KubeVirt.
	if vmi.Name == "" {
		if vmi.Spec.Domain.Firmware == nil {
			vmi.Spec.Domain.Firmware = &v1.Firmware{}
		}
		if vmi.Spec.Domain.Firmware.UUID == "" {
			vmi.Spec.Domain.Firmware.UUID = types.UID(uuid.NewString())
		}
	}
	api.Default(&vmi, m.cluster)
	if !slices.Contains(vmi.Finalizers, v1.VirtualMachineInstanceFinalizer) {
		vmi.Finalizers = append(vmi.Finalizers, v1.VirtualMachineInstanceFinalizer)
	}
	vmi.Status.Phase = v1.Pending
	vmi.Status.PhaseTransitionTimestamps = append(vmi.Status.PhaseTransitionTimestamps,
		v1.VirtualMachineInstancePhaseTransitionTimestamp{Phase: v1.Pending, PhaseTransitionTimestamp: metav1.NewTime(m.now())})
	return patched(req, &vmi)
}

// vmiCreateValidator refuses a VMI being created that KubeVirt's VMI
// admission would refuse, as the library's api.ValidateCreate says, each
// problem on its field path.
type vmiCreateValidator struct{}

func (vmiCreateValidator) Handle(_ context.Context, req admission.Request) admission.Response {
	var vmi v1.VirtualMachineInstance
	if err := json.Unmarshal(req.Object.Raw, &vmi); err != nil {
		return badRequest(err)
	}
	if errs := api.ValidateCreate(&vmi); len(errs) > 0 {
		return refused(errs)
	}
	return admission.Allowed("")
}

// vmiUpdateValidator lets every change of a VMI's metadata and status
// through — a node agent's status, finalizers and node binding, the
// control plane's finalizers and annotations — and a change of its spec
// only when one of users makes it and live says so, as KubeVirt's VMI
// update admission lets only its own service accounts change a spec.
type vmiUpdateValidator struct {
	users map[string]bool
	live  LiveUpdate
}

func (v *vmiUpdateValidator) Handle(_ context.Context, req admission.Request) admission.Response {
	var old, cur v1.VirtualMachineInstance
	if err := json.Unmarshal(req.OldObject.Raw, &old); err != nil {
		return badRequest(err)
	}
	if err := json.Unmarshal(req.Object.Raw, &cur); err != nil {
		return badRequest(err)
	}
	if equality.Semantic.DeepEqual(old.Spec, cur.Spec) {
		return admission.Allowed("")
	}
	if !v.users[req.UserInfo.Username] {
		return refused(field.ErrorList{restricted})
	}
	if errs := v.live(&old, &cur); len(errs) > 0 {
		return refused(errs)
	}
	return admission.Allowed("")
}
