package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	"github.com/vmi2libvirt/vmi2libvirt/api"
)

var now = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// request is an admission request of op for obj (and old, for updates).
func request(t *testing.T, op admissionv1.Operation, obj, old any) admission.Request {
	t.Helper()
	raw := func(v any) runtime.RawExtension {
		if v == nil {
			return runtime.RawExtension{}
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{Operation: op, Object: raw(obj), OldObject: raw(old)}}
}

// applied is the request's object with the response's patch applied.
func applied[T any](t *testing.T, req admission.Request, resp admission.Response) *T {
	t.Helper()
	if !resp.Allowed {
		t.Fatalf("refused: %+v", resp.Result)
	}
	ops, err := json.Marshal(resp.Patches)
	if err != nil {
		t.Fatal(err)
	}
	p, err := jsonpatch.DecodePatch(ops)
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Apply(req.Object.Raw)
	if err != nil {
		t.Fatal(err)
	}
	var obj T
	if err := json.Unmarshal(out, &obj); err != nil {
		t.Fatal(err)
	}
	return &obj
}

func smallVMI() *v1.VirtualMachineInstance {
	guest := resource.MustParse("64Mi")
	return &v1.VirtualMachineInstance{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachineInstance"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tiny"},
		Spec:       v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{Memory: &v1.Memory{Guest: &guest}}},
	}
}

// TestVMIMutator: a created VMI gets api.Default's defaults, KubeVirt's
// finalizer and phase Pending with its transition; an update is let
// through untouched.
func TestVMIMutator(t *testing.T) {
	m := &vmiMutator{now: func() time.Time { return now }}
	req := request(t, admissionv1.Create, smallVMI(), nil)
	got := applied[v1.VirtualMachineInstance](t, req, m.Handle(context.Background(), req))
	want := smallVMI()
	api.Default(want, api.ClusterConfig{})
	want.Finalizers = []string{v1.VirtualMachineInstanceFinalizer}
	want.Status.Phase = v1.Pending
	want.Status.PhaseTransitionTimestamps = []v1.VirtualMachineInstancePhaseTransitionTimestamp{{Phase: v1.Pending, PhaseTransitionTimestamp: metav1.NewTime(now)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mutated VMI (-want +got):\n%s", diff)
	}

	named := smallVMI()
	named.Name, named.GenerateName = "", "tiny-"
	req = request(t, admissionv1.Create, named, nil)
	got = applied[v1.VirtualMachineInstance](t, req, m.Handle(context.Background(), req))
	if uuid := got.Spec.Domain.Firmware.UUID; uuid == "" || uuid == api.FirmwareUUID("ns", "") {
		t.Errorf("a VMI of generateName got firmware UUID %q, want a random one", uuid)
	}

	req = request(t, admissionv1.Update, smallVMI(), smallVMI())
	if resp := m.Handle(context.Background(), req); !resp.Allowed || len(resp.Patches) != 0 {
		t.Errorf("update: %+v", resp)
	}
}

// TestVMIUpdateValidator: a change of metadata or status goes through,
// whoever makes it; a change of the spec is refused at spec unless one of
// KubeVirt's users makes it and the LiveUpdate allows it.
func TestVMIUpdateValidator(t *testing.T) {
	v := &vmiUpdateValidator{users: map[string]bool{"vmi2libvirt-controlplane": true}, live: RefuseSpecChanges}
	as := func(user string, obj, old any) admission.Request {
		req := request(t, admissionv1.Update, obj, old)
		req.UserInfo.Username = user
		return req
	}
	old := smallVMI()
	status := old.DeepCopy()
	status.Labels = map[string]string{v1.NodeNameLabel: "node01"}
	status.Finalizers = []string{"vmi2libvirt.github.com/nodeagent"}
	status.Status.Phase = v1.Running
	if resp := v.Handle(context.Background(), as("alice", status, old)); !resp.Allowed {
		t.Errorf("metadata and status change refused: %+v", resp.Result)
	}
	spec := old.DeepCopy()
	spec.Spec.Domain.Memory.Guest = resource.NewQuantity(96<<20, resource.BinarySI)
	refusedAtSpec := func(who string, resp admission.Response) {
		t.Helper()
		if resp.Allowed || resp.Result.Code != 422 || len(resp.Result.Details.Causes) != 1 || resp.Result.Details.Causes[0].Field != "spec" ||
			resp.Result.Message != "spec: Forbidden: update of VMI object is restricted" {
			t.Errorf("spec change by %s: %+v", who, resp.Result)
		}
	}
	refusedAtSpec("the control plane, RefuseSpecChanges", v.Handle(context.Background(), as("vmi2libvirt-controlplane", spec, old)))
	v.live = func(old, new *v1.VirtualMachineInstance) field.ErrorList { return nil }
	if resp := v.Handle(context.Background(), as("vmi2libvirt-controlplane", spec, old)); !resp.Allowed {
		t.Errorf("a spec change the live update allows refused: %+v", resp.Result)
	}
	refusedAtSpec("a user", v.Handle(context.Background(), as("alice", spec, old)))
}

func smallVM(bus v1.DiskBus) *v1.VirtualMachine {
	vmi := smallVMI()
	vmi.Spec.Domain.Devices.Disks = []v1.Disk{{Name: "d", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: bus}}}}
	vmi.Spec.Volumes = []v1.Volume{{Name: "d", VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{Capacity: resource.MustParse("1Mi")}}}}
	strategy := v1.RunStrategyHalted
	return &v1.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm"},
		Spec:       v1.VirtualMachineSpec{RunStrategy: &strategy, Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: vmi.Spec}},
	}
}

// TestVMValidator: a VM's template is checked as the VMI it makes, its
// problems at their place in the VM; an update that leaves the spec as it
// is goes through.
func TestVMValidator(t *testing.T) {
	v := &vmValidator{}
	if resp := v.Handle(context.Background(), request(t, admissionv1.Create, smallVM(v1.DiskBusVirtio), nil)); !resp.Allowed {
		t.Errorf("a valid VM refused: %+v", resp.Result)
	}
	bad := smallVM("floppy")
	resp := v.Handle(context.Background(), request(t, admissionv1.Create, bad, nil))
	wantCause := metav1.StatusCause{Type: metav1.CauseTypeFieldValueNotSupported, Field: "spec.template.spec.domain.devices.disks[0].disk.bus",
		Message: `Unsupported value: "floppy": supported values: "virtio", "scsi", "sata", "usb"`}
	if resp.Allowed || resp.Result.Reason != metav1.StatusReasonInvalid || len(resp.Result.Details.Causes) != 1 {
		t.Fatalf("floppy bus: %+v", resp.Result)
	}
	if diff := cmp.Diff(wantCause, resp.Result.Details.Causes[0]); diff != "" {
		t.Errorf("cause (-want +got):\n%s", diff)
	}
	touched := bad.DeepCopy()
	touched.Annotations = map[string]string{"a": "b"}
	if resp := v.Handle(context.Background(), request(t, admissionv1.Update, touched, bad)); !resp.Allowed {
		t.Errorf("an update of its metadata refused: %+v", resp.Result)
	}
	changed := smallVM(v1.DiskBusVirtio)
	changed.Spec.Template.Spec.Domain.Devices.Disks[0].Disk.Bus = "floppy"
	if resp := v.Handle(context.Background(), request(t, admissionv1.Update, changed, smallVM(v1.DiskBusVirtio))); resp.Allowed {
		t.Error("an update to a floppy bus let through")
	}
}

// TestVMMutator: a VM's template gets the architecture and machine type of
// api.Default, on creation and on a change of its spec; nothing else, and
// nothing on an update of its metadata.
func TestVMMutator(t *testing.T) {
	m := &vmMutator{}
	req := request(t, admissionv1.Create, smallVM(v1.DiskBusVirtio), nil)
	got := applied[v1.VirtualMachine](t, req, m.Handle(context.Background(), req))
	want := smallVM(v1.DiskBusVirtio)
	want.Spec.Template.Spec.Architecture = "amd64"
	want.Spec.Template.Spec.Domain.Machine = &v1.Machine{Type: "q35"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mutated VM (-want +got):\n%s", diff)
	}
	touched := smallVM(v1.DiskBusVirtio)
	touched.Annotations = map[string]string{"a": "b"}
	if resp := m.Handle(context.Background(), request(t, admissionv1.Update, touched, smallVM(v1.DiskBusVirtio))); !resp.Allowed || len(resp.Patches) != 0 {
		t.Errorf("a metadata update: %+v", resp)
	}
	set := smallVM(v1.DiskBusVirtio)
	set.Spec.Template.Spec.Architecture = "amd64"
	set.Spec.Template.Spec.Domain.Machine = &v1.Machine{Type: "pc-q35-7.2"}
	if resp := m.Handle(context.Background(), request(t, admissionv1.Create, set, nil)); !resp.Allowed || len(resp.Patches) != 0 {
		t.Errorf("a VM with both set: %+v", resp)
	}
}

// TestRefusedCountsTheRest: at most 10 causes, as KubeVirt's, the rest
// counted in the message.
func TestRefusedCountsTheRest(t *testing.T) {
	var errs field.ErrorList
	for i := range 12 {
		errs = append(errs, field.Required(field.NewPath("spec").Child(fmt.Sprintf("f%d", i)), ""))
	}
	resp := refused(errs)
	if n := len(resp.Result.Details.Causes); n != 10 {
		t.Errorf("%d causes, want 10", n)
	}
	if !strings.HasPrefix(resp.Result.Message, "spec.f0: Required value, spec.f1: Required value") || !strings.HasSuffix(resp.Result.Message, ", and 2 more validation errors") {
		t.Errorf("message %q", resp.Result.Message)
	}
}
