package admission

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
)

// HotplugUpdate is KubeVirt's VMI update admission of its own spec
// changes (admitHotplug: CPU, memory and AdmitHotplugStorage), the
// default LiveUpdate: maxSockets and maxGuest stay; a permanent volume (one
// whose status has no hotplugVolume) and its disk stay as they are; a
// hot-plugged volume and its disk do not change once there; a volume added
// is a claim or data volume with a disk on bus scsi or virtio (a LUN on
// scsi); every volume has one disk. Each problem is at its field path,
// with KubeVirt's message.
func HotplugUpdate(old, cur *v1.VirtualMachineInstance) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if maxSockets(old) != maxSockets(cur) {
		errs = append(errs, field.Forbidden(spec.Child("domain", "cpu", "maxSockets"), "CPU topology maxSockets changed"))
	}
	if o, c := old.Spec.Domain.Memory, cur.Spec.Domain.Memory; o != nil && o.MaxGuest != nil && c != nil && c.MaxGuest != nil && !o.MaxGuest.Equal(*c.MaxGuest) {
		errs = append(errs, field.Forbidden(spec.Child("domain", "memory", "maxGuest"), "Memory maxGuest changed"))
	}

	volumes := spec.Child("volumes")
	if declared, required := expectedVolumes(cur); declared != required {
		// What follows would only say it again, volume by volume.
		return append(errs, field.Invalid(volumes, declared, fmt.Sprintf("mismatch between volumes declared (%d) and required (%d)", declared, required)))
	}
	permanent := map[string]bool{}
	for _, vs := range old.Status.VolumeStatus {
		if vs.HotplugVolume == nil {
			permanent[vs.Name] = true
		}
	}
	oldVols, oldDisks := volumesByName(old), disksByName(old)
	newDisks := disksByName(cur)
	kept := 0
	for i, vol := range cur.Spec.Volumes {
		p := volumes.Index(i)
		was, had := oldVols[vol.Name]
		disk, hasDisk := newDisks[vol.Name]
		oldDisk := oldDisks[vol.Name]
		switch {
		case permanent[vol.Name]:
			kept++
			switch {
			case !had:
				errs = append(errs, field.Forbidden(p, fmt.Sprintf("permanent volume %s, not found", vol.Name)))
			case !equality.Semantic.DeepEqual(was, vol):
				errs = append(errs, field.Forbidden(p, fmt.Sprintf("permanent volume %s, changed", vol.Name)))
			case !equality.Semantic.DeepEqual(oldDisk.disk, disk.disk):
				errs = append(errs, field.Forbidden(disk.path, fmt.Sprintf("permanent disk %s, changed", vol.Name)))
			}
		case had:
			switch {
			case !equality.Semantic.DeepEqual(was, vol):
				errs = append(errs, field.Forbidden(p, fmt.Sprintf("hotplug volume %s, changed", vol.Name)))
			case !hasDisk:
				errs = append(errs, field.Forbidden(p, fmt.Sprintf("volume %s doesn't have a matching disk", vol.Name)))
			case !equality.Semantic.DeepEqual(oldDisk.disk, disk.disk):
				errs = append(errs, field.Forbidden(disk.path, fmt.Sprintf("hotplug disk %s, changed", vol.Name)))
			}
		case vol.PersistentVolumeClaim == nil && vol.DataVolume == nil:
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("volume %s is not a PVC or DataVolume", vol.Name)))
		case !hasDisk:
			errs = append(errs, field.Forbidden(p, fmt.Sprintf("disk %s does not exist", vol.Name)))
		default:
			errs = append(errs, hotplugDisk(disk.path, &disk.disk)...)
		}
	}
	if kept != len(permanent) {
		errs = append(errs, field.Forbidden(volumes, "Number of permanent volumes has changed"))
	}
	return errs
}

// expectedVolumes counts the VMI's volumes (by name, a memory dump's aside)
// and those its disks and filesystems need (an empty CD-ROM needs none),
// as KubeVirt's validateExpectedDisksAndFilesystems.
func expectedVolumes(vmi *v1.VirtualMachineInstance) (declared, required int) {
	names := map[string]bool{}
	for _, v := range vmi.Spec.Volumes {
		if v.MemoryDump == nil {
			names[v.Name] = true
		}
	}
	required = len(vmi.Spec.Domain.Devices.Filesystems)
	for _, d := range vmi.Spec.Domain.Devices.Disks {
		if names[d.Name] || d.CDRom == nil {
			required++
		}
	}
	return len(names), required
}

// hotplugDisk checks the disk of a volume being hot-plugged, as KubeVirt's
// ValidateHotplugDiskConfiguration.
func hotplugDisk(p *field.Path, d *v1.Disk) field.ErrorList {
	const prefix = "Hotplug configuration"
	var bus v1.DiskBus
	switch {
	case d.Disk != nil:
		bus = d.Disk.Bus
		if bus != v1.DiskBusSCSI && bus != v1.DiskBusVirtio {
			return field.ErrorList{field.Invalid(p.Child("disk", "bus"), bus, fmt.Sprintf("%s for disk [%s] requires bus to be 'scsi' or 'virtio'. [%s] is not permitted.", prefix, d.Name, bus))}
		}
	case d.LUN != nil:
		bus = d.LUN.Bus
		if bus != v1.DiskBusSCSI {
			return field.ErrorList{field.Invalid(p.Child("lun", "bus"), bus, fmt.Sprintf("%s for LUN [%s] requires bus to be 'scsi'. [%s] is not permitted.", prefix, d.Name, bus))}
		}
	default:
		return field.ErrorList{field.Invalid(p, d.Name, fmt.Sprintf("%s for [%s] requires diskDevice of type 'disk' or 'lun' to be used.", prefix, d.Name))}
	}
	if d.DedicatedIOThread != nil && *d.DedicatedIOThread && bus != v1.DiskBusVirtio {
		return field.ErrorList{field.Invalid(p.Child("dedicatedIOThread"), true, fmt.Sprintf("%s for [%s] requires virtio bus for IOThreads.", prefix, d.Name))}
	}
	if d.BootOrder != nil && *d.BootOrder < 1 {
		return field.ErrorList{field.Invalid(p.Child("bootOrder"), *d.BootOrder, "must have a boot order > 0, if supplied")}
	}
	return nil
}

// maxSockets is the VMI's spec.domain.cpu.maxSockets; 0 without a CPU.
func maxSockets(vmi *v1.VirtualMachineInstance) uint32 {
	if vmi.Spec.Domain.CPU == nil {
		return 0
	}
	return vmi.Spec.Domain.CPU.MaxSockets
}

// volumesByName indexes the VMI's volumes.
func volumesByName(vmi *v1.VirtualMachineInstance) map[string]v1.Volume {
	m := map[string]v1.Volume{}
	for _, v := range vmi.Spec.Volumes {
		m[v.Name] = v
	}
	return m
}

// placedDisk is a disk and its field path.
type placedDisk struct {
	disk v1.Disk
	path *field.Path
}

// disksByName indexes the VMI's disks, with their paths.
func disksByName(vmi *v1.VirtualMachineInstance) map[string]placedDisk {
	m := map[string]placedDisk{}
	disks := field.NewPath("spec", "domain", "devices", "disks")
	for i, d := range vmi.Spec.Domain.Devices.Disks {
		m[d.Name] = placedDisk{d, disks.Index(i)}
	}
	return m
}
