package subresources

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// Volume hotplug: virtctl addvolume and removevolume, as virt-api of
// KubeVirt v1.8 serves them with declarative hotplug (feature gate
// DeclarativeHotplugVolumes, not HotplugVolumes). On a VM the request
// changes its template; on a VMI that no VM owns, the VMI's spec. Both are
// JSON patches that test the volumes and disks they replace. The VM
// controller carries a VM's template's hot-pluggable volumes to its running
// VMI (controlplane/vm), the VMI update admission lets the control plane's
// user make such changes (admission.HotplugUpdate), and the node agent
// attaches or detaches a disk whose VMI spec changed.

// The messages of virt-api's refusals of volume requests.
const (
	msgNoVolumeBody = "Request with no body, a new name is expected as the request body"
	msgAddNoName    = "AddVolumeOptions requires name to be set"
	msgAddNoDisk    = "AddVolumeOptions requires disk to not be nil"
	msgAddNoSource  = "AddVolumeOptions requires VolumeSource to not be nil"
	msgRemoveNoName = "RemoveVolumeOptions requires name to be set"
)

// volumeRequest is one add or remove request, decoded and checked.
type volumeRequest = v1.VirtualMachineVolumeRequest

// decodeVolumeRequest reads the body of an addvolume (add) or
// removevolume request, with virt-api's refusals (400); an added volume's
// source is made hot-pluggable and its disk named after it.
func decodeVolumeRequest(r *http.Request, add bool) (*volumeRequest, *apierrors.StatusError) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, apierrors.NewBadRequest(msgNoVolumeBody)
	}
	if !add {
		opts := &v1.RemoveVolumeOptions{}
		if serr := decodeBody(r, opts); serr != nil {
			return nil, serr
		}
		if opts.Name == "" {
			return nil, apierrors.NewBadRequest(msgRemoveNoName)
		}
		return &volumeRequest{RemoveVolumeOptions: opts}, nil
	}
	opts := &v1.AddVolumeOptions{}
	if serr := decodeBody(r, opts); serr != nil {
		return nil, serr
	}
	switch {
	case opts.Name == "":
		return nil, apierrors.NewBadRequest(msgAddNoName)
	case opts.Disk == nil:
		return nil, apierrors.NewBadRequest(msgAddNoDisk)
	case opts.VolumeSource == nil:
		return nil, apierrors.NewBadRequest(msgAddNoSource)
	}
	opts.Disk.Name = opts.Name
	if dv := opts.VolumeSource.DataVolume; dv != nil {
		dv.Hotpluggable = true
	} else if pvc := opts.VolumeSource.PersistentVolumeClaim; pvc != nil {
		pvc.Hotpluggable = true
	}
	return &volumeRequest{AddVolumeOptions: opts}, nil
}

// dryRunOf is the request's dryRun, when it asks for one (["All"]).
func dryRunOf(req *volumeRequest) []string {
	var d []string
	if o := req.AddVolumeOptions; o != nil {
		d = o.DryRun
	} else if o := req.RemoveVolumeOptions; o != nil {
		d = o.DryRun
	}
	if len(d) > 0 && d[0] == metav1.DryRunAll {
		return d
	}
	return nil
}

// checkVolumeRequest refuses a request that the volumes cannot take, with
// virt-api's messages: an added volume whose name, or whose claim or data
// volume, a volume has already; a removed volume that no volume is (by
// name or claim) or that is not hot-pluggable. It returns the refusal's
// message (virt-api's, capitalized), or "" when the volumes can take req.
func checkVolumeRequest(volumes []v1.Volume, req *volumeRequest) string {
	if add := req.AddVolumeOptions; add != nil {
		source := hotplugSourceName(add.VolumeSource)
		for i := range volumes {
			switch {
			case volumes[i].Name == add.Name:
				return fmt.Sprintf("Unable to add volume [%s] because volume with that name already exists", add.Name)
			case source != "" && claimOf(&volumes[i]) == source:
				return fmt.Sprintf("Unable to add volume source [%s] because it already exists", source)
			}
		}
		return ""
	}
	name := req.RemoveVolumeOptions.Name
	for i := range volumes {
		if volumes[i].Name == name || claimOf(&volumes[i]) == name {
			if !convert.Hotpluggable(&volumes[i]) {
				return fmt.Sprintf("Unable to remove volume [%s] because it is not hotpluggable", volumes[i].Name)
			}
			return ""
		}
	}
	return fmt.Sprintf("Unable to remove volume [%s] because it does not exist", name)
}

// hotplugSourceName is the claim or data volume an added volume names.
func hotplugSourceName(s *v1.HotplugVolumeSource) string {
	switch {
	case s.DataVolume != nil:
		return s.DataVolume.Name
	case s.PersistentVolumeClaim != nil:
		return s.PersistentVolumeClaim.ClaimName
	}
	return ""
}

// claimOf is the claim or data volume a volume names ("": neither).
func claimOf(v *v1.Volume) string {
	switch {
	case v.DataVolume != nil:
		return v.DataVolume.Name
	case v.PersistentVolumeClaim != nil:
		return v.PersistentVolumeClaim.ClaimName
	}
	return ""
}

// applyVolumeRequest is spec with the request applied, as KubeVirt's
// ApplyVolumeRequestOnVMISpec: an added volume (unless one has its name)
// and its disk appended; a removed one's volume and disk, by name, gone.
func applyVolumeRequest(spec *v1.VirtualMachineInstanceSpec, req *volumeRequest) *v1.VirtualMachineInstanceSpec {
	out := spec.DeepCopy()
	if add := req.AddVolumeOptions; add != nil {
		for _, v := range out.Volumes {
			if v.Name == add.Name {
				return out
			}
		}
		vol := v1.Volume{Name: add.Name}
		if pvc := add.VolumeSource.PersistentVolumeClaim; pvc != nil {
			vol.PersistentVolumeClaim = pvc.DeepCopy()
			vol.PersistentVolumeClaim.Hotpluggable = true
		} else if dv := add.VolumeSource.DataVolume; dv != nil {
			vol.DataVolume = dv.DeepCopy()
			vol.DataVolume.Hotpluggable = true
		}
		out.Volumes = append(out.Volumes, vol)
		if add.Disk != nil {
			disk := add.Disk.DeepCopy()
			disk.Name = add.Name
			out.Domain.Devices.Disks = append(out.Domain.Devices.Disks, *disk)
		}
		return out
	}
	name := req.RemoveVolumeOptions.Name
	out.Volumes = nil
	for _, v := range spec.Volumes {
		if v.Name != name {
			out.Volumes = append(out.Volumes, *v.DeepCopy())
		}
	}
	out.Domain.Devices.Disks = nil
	for _, d := range spec.Domain.Devices.Disks {
		if d.Name != name {
			out.Domain.Devices.Disks = append(out.Domain.Devices.Disks, *d.DeepCopy())
		}
	}
	return out
}

// volumeRequestPatch is the JSON patch that applies req to spec, the spec
// at prefix ("" for a VMI, "/spec/template" for a VM), as virt-api's
// generateVolumeRequestPatch: the volumes and disks tested, then replaced
// (added where the list was empty).
func volumeRequestPatch(prefix string, spec *v1.VirtualMachineInstanceSpec, req *volumeRequest) ([]byte, error) {
	volumesPath, disksPath := prefix+"/spec/volumes", prefix+"/spec/domain/devices/disks"
	next := applyVolumeRequest(spec, req)
	ops := []patchOp{test(volumesPath, spec.Volumes), test(disksPath, spec.Domain.Devices.Disks)}
	set := func(path string, had int, v any) {
		if had > 0 {
			ops = append(ops, replace(path, v))
		} else {
			ops = append(ops, add(path, v))
		}
	}
	set(volumesPath, len(spec.Volumes), next.Volumes)
	set(disksPath, len(spec.Domain.Devices.Disks), next.Domain.Devices.Disks)
	return json.Marshal(ops)
}

// vmVolume serves PUT virtualmachines/NAME/addvolume (add) and
// removevolume: the VM's template gets the request (checked against its
// volumes: 409 on the VM), and the VM controller the rest. 202 Accepted.
func (s *Server) vmVolume(add bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, ns, name := r.Context(), r.PathValue("namespace"), r.PathValue("name")
		req, serr := decodeVolumeRequest(r, add)
		if serr == nil {
			serr = s.patchVMVolumes(ctx, ns, name, req)
		}
		if serr != nil {
			writeStatus(w, serr)
			return
		}
		s.log.Info("subresources: "+volumeOp(add), "vm", ns+"/"+name)
		w.WriteHeader(http.StatusAccepted)
	}
}

// vmiVolume serves PUT virtualmachineinstances/NAME/addvolume (add) and
// removevolume: the running VMI's spec gets the request. A VMI that a VM
// owns is refused (400: its VM's template is what changes, as with
// declarative hotplug), so is one not running (409), or a request its
// volumes cannot take (409). 202 Accepted.
func (s *Server) vmiVolume(add bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, ns, name := r.Context(), r.PathValue("namespace"), r.PathValue("name")
		req, serr := decodeVolumeRequest(r, add)
		if serr == nil {
			serr = s.patchVMIVolumes(ctx, ns, name, req)
		}
		if serr != nil {
			writeStatus(w, serr)
			return
		}
		s.log.Info("subresources: "+volumeOp(add), "vmi", ns+"/"+name)
		w.WriteHeader(http.StatusAccepted)
	}
}

// volumeOp names the subresource.
func volumeOp(add bool) string {
	if add {
		return "addvolume"
	}
	return "removevolume"
}

// patchVMVolumes applies req to the template of the VM ns/name.
func (s *Server) patchVMVolumes(ctx context.Context, ns, name string, req *volumeRequest) *apierrors.StatusError {
	vm, serr := s.fetchVM(ctx, ns, name)
	if serr != nil {
		return serr
	}
	if vm.Spec.Template == nil {
		vm.Spec.Template = &v1.VirtualMachineInstanceTemplateSpec{}
	}
	spec := &vm.Spec.Template.Spec
	if msg := checkVolumeRequest(spec.Volumes, req); msg != "" {
		return vmConflict(name, msg)
	}
	patch, err := volumeRequestPatch("/spec/template", spec, req)
	if err != nil {
		return vmConflict(name, err.Error())
	}
	err = s.kube.Patch(ctx, vm, client.RawPatch(types.JSONPatchType, patch), &client.PatchOptions{DryRun: dryRunOf(req)})
	return volumePatchError("vm", err)
}

// patchVMIVolumes applies req to the spec of the VMI ns/name.
func (s *Server) patchVMIVolumes(ctx context.Context, ns, name string, req *volumeRequest) *apierrors.StatusError {
	vmi, serr := s.fetchVMI(ctx, ns, name)
	if serr != nil {
		return serr
	}
	if owner := metav1.GetControllerOf(vmi); owner != nil && owner.Kind == "VirtualMachine" && owner.APIVersion == v1.SchemeGroupVersion.String() {
		return apierrors.NewBadRequest(fmt.Sprintf("VMI %s/%s is owned by a VM", vmi.Namespace, vmi.Name))
	}
	if !vmi.IsRunning() {
		return vmiConflict(name, msgVMINotRunning)
	}
	if msg := checkVolumeRequest(vmi.Spec.Volumes, req); msg != "" {
		return vmiConflict(name, msg)
	}
	patch, err := volumeRequestPatch("", &vmi.Spec, req)
	if err != nil {
		return vmiConflict(name, err.Error())
	}
	err = s.kube.Patch(ctx, vmi, client.RawPatch(types.JSONPatchType, patch), &client.PatchOptions{DryRun: dryRunOf(req)})
	return volumePatchError("vmi", err)
}

// volumePatchError is virt-api's answer to a failed patch of a VM or VMI
// (kind "vm" or "vmi"): the API server's refusal when it is Invalid (the
// admission's, a failed test), otherwise 500.
func volumePatchError(kind string, err error) *apierrors.StatusError {
	if err == nil {
		return nil
	}
	if se, ok := err.(*apierrors.StatusError); ok && apierrors.IsInvalid(err) {
		return se
	}
	return apierrors.NewInternalError(fmt.Errorf("unable to patch %s: %v", kind, err))
}
