package vm

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	v1 "kubevirt.io/api/core/v1"
)

// claimVolume is a volume of the claim name, hot-pluggable or not.
func claimVolume(name string, hot bool) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: name}, Hotpluggable: hot}}}
}

// scsiDisk is a SCSI disk of the volume name.
func scsiDisk(name string) v1.Disk {
	return v1.Disk{Name: name, Serial: name, DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusSCSI}}}
}

// specOf is a spec with the volumes and a SCSI disk for each.
func specOf(vols ...v1.Volume) v1.VirtualMachineInstanceSpec {
	var spec v1.VirtualMachineInstanceSpec
	for _, vol := range vols {
		spec.Volumes = append(spec.Volumes, vol)
		spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, scsiDisk(vol.Name))
	}
	return spec
}

// TestHotplugSpec: the running VMI gets the template's hot-pluggable
// volumes, with their disks, after its own; loses those the template
// dropped or changed; keeps the rest, in order, whatever the template
// says of it; and does not get back one still detaching (its status
// there).
func TestHotplugSpec(t *testing.T) {
	root := v1.Volume{Name: "root", VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{Capacity: resource.MustParse("1Gi")}}}
	changedHot := claimVolume("b", true)
	changedHot.PersistentVolumeClaim.ReadOnly = true
	for _, tc := range []struct {
		name     string
		tmpl     v1.VirtualMachineInstanceSpec
		vmi      v1.VirtualMachineInstanceSpec
		status   []string // names in the VMI's volumeStatus
		want     []string // the VMI's volumes after, in order
		disks    []string // its disks after, in order
		changed  bool
		readOnly bool // the VMI's b is read-only after
	}{
		{name: "equal", tmpl: specOf(root, claimVolume("a", true)), vmi: specOf(root, claimVolume("a", true)),
			want: []string{"root", "a"}, disks: []string{"root", "a"}},
		{name: "added", tmpl: specOf(root, claimVolume("a", true), claimVolume("b", true)), vmi: specOf(root),
			want: []string{"root", "a", "b"}, disks: []string{"root", "a", "b"}, changed: true},
		{name: "removed", tmpl: specOf(root), vmi: specOf(root, claimVolume("a", true), claimVolume("b", true)),
			want: []string{"root"}, disks: []string{"root"}, changed: true},
		{name: "changed: removed first", tmpl: specOf(root, changedHot), vmi: specOf(root, claimVolume("b", true)),
			want: []string{"root"}, disks: []string{"root"}, changed: true},
		{name: "changed and detached: added again", tmpl: specOf(root, changedHot), vmi: specOf(root),
			want: []string{"root", "b"}, disks: []string{"root", "b"}, changed: true, readOnly: true},
		{name: "still detaching", tmpl: specOf(root, claimVolume("a", true)), vmi: specOf(root), status: []string{"root", "a"},
			want: []string{"root"}, disks: []string{"root"}},
		{name: "not hot-pluggable: the VMI's stays, the template's waits for a restart",
			tmpl: specOf(claimVolume("c", false)), vmi: specOf(root),
			want: []string{"root"}, disks: []string{"root"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := &v1.VirtualMachineInstance{Spec: tc.vmi}
			for _, n := range tc.status {
				vmi.Status.VolumeStatus = append(vmi.Status.VolumeStatus, v1.VolumeStatus{Name: n})
			}
			before := vmi.DeepCopy()
			vols, disks, changed := hotplugSpec(&tc.tmpl, vmi)
			var gotVols, gotDisks []string
			for _, v := range vols {
				gotVols = append(gotVols, v.Name)
				if v.Name == "b" && (v.PersistentVolumeClaim.ReadOnly != tc.readOnly) {
					t.Errorf("volume b read-only %t, want %t", v.PersistentVolumeClaim.ReadOnly, tc.readOnly)
				}
			}
			for _, d := range disks {
				gotDisks = append(gotDisks, d.Name)
			}
			if diff := cmp.Diff(tc.want, gotVols); diff != "" {
				t.Errorf("volumes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.disks, gotDisks); diff != "" {
				t.Errorf("disks (-want +got):\n%s", diff)
			}
			if changed != tc.changed {
				t.Errorf("changed %t, want %t", changed, tc.changed)
			}
			if diff := cmp.Diff(before, vmi); diff != "" {
				t.Errorf("hotplugSpec changed the VMI (-before +after):\n%s", diff)
			}
		})
	}
}

// TestRestartRequiredHotplug: a template whose only change is a
// hot-pluggable volume added or removed, with its disk, needs no restart;
// one that also changes another volume, or adds a volume that is not
// hot-pluggable, does.
func TestRestartRequiredHotplug(t *testing.T) {
	root := v1.Volume{Name: "root", VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{Capacity: resource.MustParse("1Gi")}}}
	bigger := root
	bigger.EmptyDisk = &v1.EmptyDiskSource{Capacity: resource.MustParse("2Gi")}
	for _, tc := range []struct {
		name      string
		last, cur v1.VirtualMachineInstanceSpec
		restart   bool
	}{
		{"hot-pluggable added", specOf(root), specOf(root, claimVolume("a", true)), false},
		{"hot-pluggable removed", specOf(root, claimVolume("a", true)), specOf(root), false},
		{"hot-pluggable added, another volume changed", specOf(root), specOf(bigger, claimVolume("a", true)), true},
		{"not hot-pluggable added", specOf(root), specOf(root, claimVolume("a", false)), true},
		{"not hot-pluggable removed", specOf(root, claimVolume("a", false)), specOf(root), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vm := vmWith(v1.RunStrategyAlways, v1.RunStrategyAlways)
			vm.Spec.Template = &v1.VirtualMachineInstanceTemplateSpec{Spec: tc.cur}
			last := &v1.VirtualMachineSpec{Template: &v1.VirtualMachineInstanceTemplateSpec{Spec: tc.last}}
			if got := syncRestartRequired(last, vm, vmiIn(v1.Running, false), now); got != tc.restart {
				t.Errorf("restart required %t, want %t", got, tc.restart)
			}
		})
	}
}
