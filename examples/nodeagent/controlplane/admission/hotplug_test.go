package admission

import (
	"strings"
	"testing"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	v1 "kubevirt.io/api/core/v1"
)

// hotplugVMI is a running VMI with a permanent emptyDisk "root" (its
// status says so) and, when hot is true, a hot-plugged claim "data" on
// SCSI.
func hotplugVMI(hot bool) *v1.VirtualMachineInstance {
	vmi := smallVMI()
	vmi.Spec.Domain.CPU = &v1.CPU{Sockets: 1, MaxSockets: 4}
	vmi.Spec.Domain.Devices.Disks = []v1.Disk{{Name: "root", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio}}}}
	vmi.Spec.Volumes = []v1.Volume{{Name: "root", VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{Capacity: resource.MustParse("1Gi")}}}}
	vmi.Status.VolumeStatus = []v1.VolumeStatus{{Name: "root"}}
	if hot {
		vmi = withClaim(vmi, "data", v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusSCSI}})
		vmi.Status.VolumeStatus = append(vmi.Status.VolumeStatus, v1.VolumeStatus{Name: "data", HotplugVolume: &v1.HotplugVolumeStatus{}})
	}
	return vmi
}

// withClaim is vmi with the hot-pluggable claim name on a disk of device.
func withClaim(vmi *v1.VirtualMachineInstance, name string, device v1.DiskDevice) *v1.VirtualMachineInstance {
	vmi = vmi.DeepCopy()
	vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, v1.Disk{Name: name, Serial: name, DiskDevice: device})
	vmi.Spec.Volumes = append(vmi.Spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: name}, Hotpluggable: true}}})
	return vmi
}

// TestHotplugUpdate: KubeVirt's own spec changes — a claim hot-plugged or
// unplugged — pass; what KubeVirt's hotplug admission refuses is refused
// at its field path with KubeVirt's message.
func TestHotplugUpdate(t *testing.T) {
	scsi := v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusSCSI}}
	for _, tc := range []struct {
		name     string
		old      *v1.VirtualMachineInstance
		edit     func(*v1.VirtualMachineInstance) *v1.VirtualMachineInstance
		field    string // of the one error; empty: none
		contains string
	}{
		{"a claim hot-plugged on SCSI", hotplugVMI(false), func(v *v1.VirtualMachineInstance) *v1.VirtualMachineInstance { return withClaim(v, "data", scsi) }, "", ""},
		{"a claim hot-plugged on virtio", hotplugVMI(false), func(v *v1.VirtualMachineInstance) *v1.VirtualMachineInstance {
			return withClaim(v, "data", v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio}})
		}, "", ""},
		{"a LUN hot-plugged on SCSI", hotplugVMI(false), func(v *v1.VirtualMachineInstance) *v1.VirtualMachineInstance {
			return withClaim(v, "data", v1.DiskDevice{LUN: &v1.LunTarget{Bus: v1.DiskBusSCSI}})
		}, "", ""},
		{"a hot-plugged claim unplugged", hotplugVMI(true), func(*v1.VirtualMachineInstance) *v1.VirtualMachineInstance { return hotplugVMI(false) }, "", ""},
		{"hot-plugged on SATA", hotplugVMI(false), func(v *v1.VirtualMachineInstance) *v1.VirtualMachineInstance {
			return withClaim(v, "data", v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusSATA}})
		}, "spec.domain.devices.disks[1].disk.bus", "Hotplug configuration for disk [data] requires bus to be 'scsi' or 'virtio'. [sata] is not permitted."},
		{"a LUN hot-plugged on virtio", hotplugVMI(false), func(v *v1.VirtualMachineInstance) *v1.VirtualMachineInstance {
			return withClaim(v, "data", v1.DiskDevice{LUN: &v1.LunTarget{Bus: v1.DiskBusVirtio}})
		}, "spec.domain.devices.disks[1].lun.bus", "Hotplug configuration for LUN [data] requires bus to be 'scsi'."},
		{"a CD-ROM hot-plugged", hotplugVMI(false), func(v *v1.VirtualMachineInstance) *v1.VirtualMachineInstance {
			return withClaim(v, "data", v1.DiskDevice{CDRom: &v1.CDRomTarget{Bus: v1.DiskBusSCSI}})
		}, "spec.domain.devices.disks[1]", "requires diskDevice of type 'disk' or 'lun' to be used."},
		{"a dedicated IO thread on SCSI", hotplugVMI(false), func(v *v1.VirtualMachineInstance) *v1.VirtualMachineInstance {
			v = withClaim(v, "data", scsi)
			v.Spec.Domain.Devices.Disks[1].DedicatedIOThread = ptr.To(true)
			return v
		}, "spec.domain.devices.disks[1].dedicatedIOThread", "requires virtio bus for IOThreads."},
		{"an emptyDisk hot-plugged", hotplugVMI(false), func(v *v1.VirtualMachineInstance) *v1.VirtualMachineInstance {
			v = withClaim(v, "data", scsi)
			v.Spec.Volumes[1].VolumeSource = v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{Capacity: resource.MustParse("1Mi")}}
			return v
		}, "spec.volumes[1]", "volume data is not a PVC or DataVolume"},
		{"a volume without its disk", hotplugVMI(false), func(v *v1.VirtualMachineInstance) *v1.VirtualMachineInstance {
			v = withClaim(v, "data", scsi)
			v.Spec.Domain.Devices.Disks = v.Spec.Domain.Devices.Disks[:1]
			return v
		}, "spec.volumes", "mismatch between volumes declared (2) and required (1)"},
		{"the permanent volume changed", hotplugVMI(false), func(v *v1.VirtualMachineInstance) *v1.VirtualMachineInstance {
			v.Spec.Volumes[0].EmptyDisk.Capacity = resource.MustParse("2Gi")
			return v
		}, "spec.volumes[0]", "permanent volume root, changed"},
		{"the permanent disk changed", hotplugVMI(false), func(v *v1.VirtualMachineInstance) *v1.VirtualMachineInstance {
			v.Spec.Domain.Devices.Disks[0].Serial = "other"
			return v
		}, "spec.domain.devices.disks[0]", "permanent disk root, changed"},
		{"the permanent volume removed", hotplugVMI(true), func(v *v1.VirtualMachineInstance) *v1.VirtualMachineInstance {
			v.Spec.Volumes, v.Spec.Domain.Devices.Disks = v.Spec.Volumes[1:], v.Spec.Domain.Devices.Disks[1:]
			return v
		}, "spec.volumes", "Number of permanent volumes has changed"},
		{"a hot-plugged disk changed", hotplugVMI(true), func(v *v1.VirtualMachineInstance) *v1.VirtualMachineInstance {
			v.Spec.Domain.Devices.Disks[1].Serial = "other"
			return v
		}, "spec.domain.devices.disks[1]", "hotplug disk data, changed"},
		{"a hot-plugged volume changed", hotplugVMI(true), func(v *v1.VirtualMachineInstance) *v1.VirtualMachineInstance {
			v.Spec.Volumes[1].PersistentVolumeClaim.ReadOnly = true
			return v
		}, "spec.volumes[1]", "hotplug volume data, changed"},
		{"maxSockets changed", hotplugVMI(false), func(v *v1.VirtualMachineInstance) *v1.VirtualMachineInstance {
			v.Spec.Domain.CPU.MaxSockets = 8
			return v
		}, "spec.domain.cpu.maxSockets", "CPU topology maxSockets changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := HotplugUpdate(tc.old, tc.edit(tc.old.DeepCopy()))
			switch {
			case tc.contains == "" && len(errs) > 0:
				t.Errorf("refused: %v", errs)
			case tc.contains != "" && (len(errs) != 1 || errs[0].Field != tc.field || !strings.Contains(errs[0].Error(), tc.contains)):
				t.Errorf("errors %v, want one at %q saying %q", errs, tc.field, tc.contains)
			}
		})
	}
}
