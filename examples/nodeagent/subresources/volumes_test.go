package subresources

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// volumeWorld is a server whose API server is controller-runtime's fake
// client holding objs, its routes served by httptest without the
// authentication (auth_test.go tests that).
func volumeWorld(t *testing.T, objs ...client.Object) (*httptest.Server, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := v1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	// A plain tracker: the field-managed default cannot handle KubeVirt's
	// uint64 fields.
	tracker := clienttesting.NewObjectTracker(scheme, serializer.NewCodecFactory(scheme).UniversalDecoder())
	kube := fake.NewClientBuilder().WithScheme(scheme).WithObjectTracker(tracker).WithObjects(objs...).Build()
	s := &Server{kube: kube, log: slog.New(slog.DiscardHandler)}
	srv := httptest.NewServer(s.routes())
	t.Cleanup(srv.Close)
	return srv, kube
}

// put sends body (JSON of v; nil: no body) to path and returns the code
// and the Status message of a refusal.
func put(t *testing.T, srv *httptest.Server, path string, v any) (int, string) {
	t.Helper()
	var body *strings.Reader
	if v != nil {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		body = strings.NewReader(string(b))
	}
	var req *http.Request
	var err error
	if body != nil {
		req, err = http.NewRequest(http.MethodPut, srv.URL+path, body)
	} else {
		req, err = http.NewRequest(http.MethodPut, srv.URL+path, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st metav1.Status
	_ = json.NewDecoder(resp.Body).Decode(&st)
	return resp.StatusCode, st.Message
}

// runningVMI is a running VMI ns/tiny with one container disk.
func runningVMI() *v1.VirtualMachineInstance {
	vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tiny"}}
	vmi.Spec.Domain.Devices.Disks = []v1.Disk{{Name: "root", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio}}}}
	vmi.Spec.Volumes = []v1.Volume{{Name: "root", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: "tiny"}}}}
	vmi.Status.Phase = v1.Running
	return vmi
}

// addOptions are virtctl addvolume's for claim (--volume-name) on bus,
// with serial.
func addOptions(claim string, bus v1.DiskBus, serial string) *v1.AddVolumeOptions {
	return &v1.AddVolumeOptions{
		Name: claim,
		Disk: &v1.Disk{Serial: serial, DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: bus}}},
		VolumeSource: &v1.HotplugVolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}},
	}
}

const (
	vmiPath = "/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachineinstances/tiny/"
	vmPath  = "/apis/subresources.kubevirt.io/v1/namespaces/ns/virtualmachines/tiny/"
)

// addvolume on a running VMI that no VM owns: its spec gets the
// hot-pluggable claim and its disk (named after the volume, the serial
// kept); removevolume takes both away. 202 each time.
func TestVMIAddRemoveVolume(t *testing.T) {
	srv, kube := volumeWorld(t, runningVMI())
	if code, msg := put(t, srv, vmiPath+"addvolume", addOptions("data", v1.DiskBusSCSI, "d1")); code != http.StatusAccepted {
		t.Fatalf("addvolume: %d %s", code, msg)
	}
	var got v1.VirtualMachineInstance
	if err := kube.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "tiny"}, &got); err != nil {
		t.Fatal(err)
	}
	if n := len(got.Spec.Volumes); n != 2 || got.Spec.Volumes[1].PersistentVolumeClaim == nil ||
		!got.Spec.Volumes[1].PersistentVolumeClaim.Hotpluggable || got.Spec.Volumes[1].PersistentVolumeClaim.ClaimName != "data" {
		t.Fatalf("volumes %+v: want root and the hot-pluggable claim data", got.Spec.Volumes)
	}
	if d := got.Spec.Domain.Devices.Disks; len(d) != 2 || d[1].Name != "data" || d[1].Serial != "d1" || d[1].Disk == nil || d[1].Disk.Bus != v1.DiskBusSCSI {
		t.Fatalf("disks %+v: want root and data on scsi, serial d1", d)
	}

	if code, msg := put(t, srv, vmiPath+"removevolume", &v1.RemoveVolumeOptions{Name: "data"}); code != http.StatusAccepted {
		t.Fatalf("removevolume: %d %s", code, msg)
	}
	if err := kube.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "tiny"}, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Volumes) != 1 || len(got.Spec.Domain.Devices.Disks) != 1 || got.Spec.Volumes[0].Name != "root" {
		t.Fatalf("after removevolume: volumes %+v disks %+v, want root alone", got.Spec.Volumes, got.Spec.Domain.Devices.Disks)
	}
}

// addvolume on a VM changes its template only; removevolume on the VM removes it from the template.
func TestVMAddRemoveVolume(t *testing.T) {
	vm := &v1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tiny"},
		Spec: v1.VirtualMachineSpec{Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: runningVMI().Spec}}}
	owned := runningVMI()
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1.SchemeGroupVersion.String(), Kind: "VirtualMachine", Name: "tiny", UID: "vm-uid", Controller: ptr.To(true)}}
	srv, kube := volumeWorld(t, vm, owned)
	if code, msg := put(t, srv, vmPath+"addvolume", addOptions("data", v1.DiskBusVirtio, "data")); code != http.StatusAccepted {
		t.Fatalf("addvolume: %d %s", code, msg)
	}
	var got v1.VirtualMachine
	if err := kube.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "tiny"}, &got); err != nil {
		t.Fatal(err)
	}
	tmpl := got.Spec.Template.Spec
	if len(tmpl.Volumes) != 2 || tmpl.Volumes[1].PersistentVolumeClaim == nil || !tmpl.Volumes[1].PersistentVolumeClaim.Hotpluggable ||
		len(tmpl.Domain.Devices.Disks) != 2 || tmpl.Domain.Devices.Disks[1].Name != "data" {
		t.Fatalf("template volumes %+v disks %+v: want data added", tmpl.Volumes, tmpl.Domain.Devices.Disks)
	}
	var vmi v1.VirtualMachineInstance
	if err := kube.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "tiny"}, &vmi); err != nil {
		t.Fatal(err)
	}
	if len(vmi.Spec.Volumes) != 1 {
		t.Errorf("the VMI's volumes changed (%+v): the VM controller changes them, not the subresource", vmi.Spec.Volumes)
	}
	// The VM's VMI is refused on its own, as virt-api refuses it without
	// the HotplugVolumes feature gate.
	if code, msg := put(t, srv, vmiPath+"addvolume", addOptions("other", v1.DiskBusVirtio, "")); code != http.StatusBadRequest || msg != "VMI ns/tiny is owned by a VM" {
		t.Errorf("addvolume of the VM's VMI: %d %q, want 400 owned by a VM", code, msg)
	}
	if code, msg := put(t, srv, vmPath+"removevolume", &v1.RemoveVolumeOptions{Name: "data"}); code != http.StatusAccepted {
		t.Fatalf("removevolume: %d %s", code, msg)
	}
	if err := kube.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "tiny"}, &got); err != nil {
		t.Fatal(err)
	}
	if n := len(got.Spec.Template.Spec.Volumes); n != 1 {
		t.Errorf("template volumes after removevolume: %+v", got.Spec.Template.Spec.Volumes)
	}
}

// The refusals, with virt-api's codes and messages.
func TestVolumeRefusals(t *testing.T) {
	stopped := runningVMI()
	stopped.Name, stopped.Status.Phase = "stopped", v1.Succeeded
	withClaim := runningVMI()
	withClaim.Name = "claimed"
	withClaim.Spec.Volumes = append(withClaim.Spec.Volumes, v1.Volume{Name: "perm", VolumeSource: v1.VolumeSource{
		PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: "perm-claim"}}}})
	withClaim.Spec.Domain.Devices.Disks = append(withClaim.Spec.Domain.Devices.Disks, v1.Disk{Name: "perm"})
	srv, _ := volumeWorld(t, runningVMI(), stopped, withClaim)
	base := "/apis/subresources.kubevirt.io/v1/namespaces/ns/"
	noDisk := addOptions("data", v1.DiskBusVirtio, "")
	noDisk.Disk = nil
	noSource := addOptions("data", v1.DiskBusVirtio, "")
	noSource.VolumeSource = nil
	cases := []struct {
		name, path string
		body       any
		code       int
		msg        string
	}{
		{"no body", "virtualmachineinstances/tiny/addvolume", nil, http.StatusBadRequest, msgNoVolumeBody},
		{"no name", "virtualmachineinstances/tiny/addvolume", &v1.AddVolumeOptions{}, http.StatusBadRequest, msgAddNoName},
		{"no disk", "virtualmachineinstances/tiny/addvolume", noDisk, http.StatusBadRequest, msgAddNoDisk},
		{"no source", "virtualmachineinstances/tiny/addvolume", noSource, http.StatusBadRequest, msgAddNoSource},
		{"remove without name", "virtualmachineinstances/tiny/removevolume", &v1.RemoveVolumeOptions{}, http.StatusBadRequest, msgRemoveNoName},
		{"unknown VMI", "virtualmachineinstances/nope/addvolume", addOptions("data", v1.DiskBusVirtio, ""), http.StatusNotFound,
			`virtualmachineinstance.kubevirt.io "nope" not found`},
		{"unknown VM (virtctl then asks the VMI)", "virtualmachines/tiny/addvolume", addOptions("data", v1.DiskBusVirtio, ""), http.StatusNotFound,
			`virtualmachine.kubevirt.io "tiny" not found`},
		{"VMI not running", "virtualmachineinstances/stopped/addvolume", addOptions("data", v1.DiskBusVirtio, ""), http.StatusConflict,
			`Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "stopped": VMI is not running`},
		{"volume name taken", "virtualmachineinstances/tiny/addvolume", addOptions("root", v1.DiskBusVirtio, ""), http.StatusConflict,
			`Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "tiny": Unable to add volume [root] because volume with that name already exists`},
		{"claim taken", "virtualmachineinstances/claimed/addvolume", &v1.AddVolumeOptions{Name: "other", Disk: &v1.Disk{},
			VolumeSource: addOptions("perm-claim", v1.DiskBusVirtio, "").VolumeSource}, http.StatusConflict,
			`Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "claimed": Unable to add volume source [perm-claim] because it already exists`},
		{"remove a volume not hot-pluggable", "virtualmachineinstances/claimed/removevolume", &v1.RemoveVolumeOptions{Name: "perm"}, http.StatusConflict,
			`Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "claimed": Unable to remove volume [perm] because it is not hotpluggable`},
		{"remove a volume that is not there", "virtualmachineinstances/tiny/removevolume", &v1.RemoveVolumeOptions{Name: "gone"}, http.StatusConflict,
			`Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "tiny": Unable to remove volume [gone] because it does not exist`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, msg := put(t, srv, base+c.path, c.body)
			if code != c.code || msg != c.msg {
				t.Errorf("%d %q, want %d %q", code, msg, c.code, c.msg)
			}
		})
	}
}

// The JSON patch tests the volumes and disks it replaces, and adds the
// lists where the spec had none, as virt-api's generateVolumeRequestPatch.
func TestVolumeRequestPatch(t *testing.T) {
	spec := &v1.VirtualMachineInstanceSpec{}
	req := &volumeRequest{AddVolumeOptions: addOptions("data", v1.DiskBusSCSI, "")}
	req.AddVolumeOptions.Disk.Name = "data"
	got, err := volumeRequestPatch("/spec/template", spec, req)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"op":"test","path":"/spec/template/spec/volumes","value":null},` +
		`{"op":"test","path":"/spec/template/spec/domain/devices/disks","value":null},` +
		`{"op":"add","path":"/spec/template/spec/volumes","value":[{"name":"data","persistentVolumeClaim":{"claimName":"data","hotpluggable":true}}]},` +
		`{"op":"add","path":"/spec/template/spec/domain/devices/disks","value":[{"name":"data","disk":{"bus":"scsi"}}]}]`
	if string(got) != want {
		t.Errorf("patch\n%s\nwant\n%s", got, want)
	}
}
