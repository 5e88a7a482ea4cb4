package vm

import (
	"context"
	"log/slog"

	"k8s.io/apimachinery/pkg/api/equality"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// Declarative volume hotplug, as KubeVirt's VM controller does it
// (storage/hotplug.HandleDeclarativeVolumes): the template's hot-pluggable
// claims are the running VMI's. virtctl addvolume VM and removevolume VM
// change the template (package subresources); the VM controller then adds
// or removes the volume and its disk in the running VMI's spec, the VMI's
// node agent attaches or detaches the disk, and the change needs no
// restart (liveUpdatable).

// hotplugSpec returns the volumes and disks the running vmi should have
// for the template tmpl, and whether they differ from the VMI's: a
// hot-pluggable volume of the VMI that the template lacks, or has
// otherwise, is removed with its disk; a hot-pluggable volume of the
// template that the VMI lacks, and whose status is gone (a volume being
// detached keeps its status until it is), is added with the template's
// disk of its name — a changed one so comes back, changed, once the old
// one is detached. The VMI's other volumes and disks stay as they are, in
// their order; what is added comes after them, in the template's order.
func hotplugSpec(tmpl *v1.VirtualMachineInstanceSpec, vmi *v1.VirtualMachineInstance) ([]v1.Volume, []v1.Disk, bool) {
	want := map[string]*v1.Volume{}
	for i := range tmpl.Volumes {
		want[tmpl.Volumes[i].Name] = &tmpl.Volumes[i]
	}
	var vols []v1.Volume
	had := map[string]bool{}
	removed := map[string]bool{}
	for _, vol := range vmi.Spec.Volumes {
		had[vol.Name] = true
		if convert.Hotpluggable(&vol) {
			if w := want[vol.Name]; w == nil || !equality.Semantic.DeepEqual(*w, vol) {
				removed[vol.Name] = true
				continue
			}
		}
		vols = append(vols, vol)
	}
	var disks []v1.Disk
	for _, d := range vmi.Spec.Domain.Devices.Disks {
		if !removed[d.Name] {
			disks = append(disks, d)
		}
	}
	status := map[string]bool{}
	for _, vs := range vmi.Status.VolumeStatus {
		status[vs.Name] = true
	}
	tmplDisks := map[string]*v1.Disk{}
	for i := range tmpl.Domain.Devices.Disks {
		tmplDisks[tmpl.Domain.Devices.Disks[i].Name] = &tmpl.Domain.Devices.Disks[i]
	}
	added := false
	for _, vol := range tmpl.Volumes {
		d := tmplDisks[vol.Name]
		if !convert.Hotpluggable(&vol) || had[vol.Name] || status[vol.Name] || d == nil {
			continue
		}
		vols = append(vols, vol)
		disks = append(disks, *d)
		added = true
	}
	return vols, disks, added || len(removed) > 0
}

// syncHotplug makes the running vmi's hot-pluggable volumes the template's
// (hotplugSpec), in a merge patch that holds the VMI's resourceVersion: a
// VMI changed meanwhile is a conflict, retried.
func (r *reconciler) syncHotplug(ctx context.Context, vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance, log *slog.Logger) error {
	if vmi == nil || vm.Spec.Template == nil || vmi.DeletionTimestamp != nil || vmi.Status.Phase != v1.Running {
		return nil
	}
	vols, disks, changed := hotplugSpec(&vm.Spec.Template.Spec, vmi)
	if !changed {
		return nil
	}
	log.Info("controlplane: the template's hot-pluggable volumes to the VMI", "volumes", len(vols), "disks", len(disks))
	next := vmi.DeepCopy()
	next.Spec.Volumes, next.Spec.Domain.Devices.Disks = vols, disks
	return r.client.Patch(ctx, next, client.MergeFromWithOptions(vmi, client.MergeFromWithOptimisticLock{}))
}
