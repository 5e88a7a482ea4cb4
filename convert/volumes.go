package convert

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
)

// volumeKind names the source of a volume, by its field in the VMI.
type volumeKind string

// The volume sources a disk can use.
const (
	volContainerDisk        volumeKind = "containerDisk"
	volPVC                  volumeKind = "persistentVolumeClaim"
	volDataVolume           volumeKind = "dataVolume"
	volHostDisk             volumeKind = "hostDisk"
	volEmptyDisk            volumeKind = "emptyDisk"
	volEphemeral            volumeKind = "ephemeral"
	volCloudInitNoCloud     volumeKind = "cloudInitNoCloud"
	volCloudInitConfigDrive volumeKind = "cloudInitConfigDrive"
	volConfigMap            volumeKind = "configMap"
	volSecret               volumeKind = "secret"
	volServiceAccount       volumeKind = "serviceAccount"
	volDownwardAPI          volumeKind = "downwardAPI"
	volSysprep              volumeKind = "sysprep"
	volDownwardMetrics      volumeKind = "downwardMetrics"
	volMemoryDump           volumeKind = "memoryDump"
	volContainerPath        volumeKind = "containerPath"
)

// volumeKinds appends to kinds the source fields of a volume that are set
// (a buffer of two on the caller's stack saves an allocation).
func volumeKinds(v *v1.Volume, kinds []volumeKind) []volumeKind {
	s := &v.VolumeSource
	add := func(set bool, kind volumeKind) {
		if set {
			kinds = append(kinds, kind)
		}
	}
	add(s.ContainerDisk != nil, volContainerDisk)
	add(s.PersistentVolumeClaim != nil, volPVC)
	add(s.DataVolume != nil, volDataVolume)
	add(s.HostDisk != nil, volHostDisk)
	add(s.EmptyDisk != nil, volEmptyDisk)
	add(s.Ephemeral != nil, volEphemeral)
	add(s.CloudInitNoCloud != nil, volCloudInitNoCloud)
	add(s.CloudInitConfigDrive != nil, volCloudInitConfigDrive)
	add(s.ConfigMap != nil, volConfigMap)
	add(s.Secret != nil, volSecret)
	add(s.ServiceAccount != nil, volServiceAccount)
	add(s.DownwardAPI != nil, volDownwardAPI)
	add(s.Sysprep != nil, volSysprep)
	add(s.DownwardMetrics != nil, volDownwardMetrics)
	add(s.MemoryDump != nil, volMemoryDump)
	add(s.ContainerPath != nil, volContainerPath)
	return kinds
}

// volumeKindOf returns the first source set in s and how many are set.
func volumeKindOf(s *v1.Volume) (volumeKind, int) {
	var buf [2]volumeKind
	kinds := volumeKinds(s, buf[:0])
	if len(kinds) == 0 {
		return "", 0
	}
	return kinds[0], len(kinds)
}

// volumePath is the field path of spec.volumes[index].
func volumePath(index int) *field.Path {
	return volumesPath.Index(index)
}

// checkVolume returns the one source of spec.volumes[index] that a layout
// is asked to place, refusing what no layout can place: a volume whose name
// is not a file name, one without exactly one source, a source that is no
// disk's (memoryDump, containerPath), an ephemeral volume without its claim.
// (api.Validate holds the rest of a volume to KubeVirt's rules; each layout
// keeps the path it makes of a volume inside its folders whatever images
// and paths the volume names.)
func checkVolume(vmi *v1.VirtualMachineInstance, index int) (*v1.Volume, volumeKind, error) {
	if index < 0 || index >= len(vmi.Spec.Volumes) {
		return nil, "", fmt.Errorf("convert: the VMI has no spec.volumes[%d]", index)
	}
	v := &vmi.Spec.Volumes[index]
	p := itemPath{volumesPath, index}
	if !usableFileName(v.Name) {
		return nil, "", field.Invalid(p.Child("name"), v.Name, "must be usable as a file name")
	}
	var buf [2]volumeKind
	kinds := volumeKinds(v, buf[:0])
	if len(kinds) != 1 {
		return nil, "", field.Invalid(p.path(), v.Name, fmt.Sprintf("a volume has exactly one source, it has %d", len(kinds)))
	}
	kind := kinds[0]
	switch kind {
	case volMemoryDump, volContainerPath:
		return nil, "", field.Forbidden(p.Child(string(kind)), "not a disk's volume source")
	case volEphemeral:
		if v.Ephemeral.PersistentVolumeClaim == nil || v.Ephemeral.PersistentVolumeClaim.ClaimName == "" {
			return nil, "", field.Required(p.Child(string(kind), "persistentVolumeClaim", "claimName"), "")
		}
	}
	return v, kind, nil
}

// discardOnCDROM tells whether a CD-ROM backed by a volume of this kind gets
// discard=unmap, as KubeVirt's converter sets it per source (disks and LUNs
// always get it).
func discardOnCDROM(kind volumeKind) bool {
	switch kind {
	case volContainerDisk, volPVC, volDataVolume, volEmptyDisk, volEphemeral:
		return true
	}
	return false
}
