package convert

import (
	"strings"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/internal/vocab"
)

// targetPrefix is the target name prefix of a disk bus, as KubeVirt names
// them (vocab.DiskBuses): virtio disks are vda, vdb…; SATA, SCSI and USB
// disks share one sequence sda, sdb…. ok is false for a bus KubeVirt does
// not know (which api.Validate refuses).
func targetPrefix(bus v1.DiskBus) (prefix string, ok bool) {
	return vocab.DiskBuses.Lookup(string(bus))
}

// maxTargetNames is how many names a prefix has: 26 + 26² + 26³, as many
// as KubeVirt tries.
const maxTargetNames = 26 + 26*26 + 26*26*26

// targetNamer hands out the free target names of each prefix in order:
// every name before next is taken (by an earlier disk, or by
// status.volumeStatus).
type targetNamer struct {
	nextVD, nextSD int
}

// diskTarget gives disk i its target name in KubeVirt's order, in b.parts[i]
// (target.Dev, and unit: the name's index in its prefix's sequence, sda
// is 0, sdb 1…, which is also the unit of a SCSI disk on the VMI's one
// SCSI controller). A name status.volumeStatus records for the disk's
// name is kept (spec order does not matter for those); a disk named like
// an earlier one gets that disk's target; every other disk gets the
// lowest free name of its prefix, in spec order. When all are taken, the
// name is empty.
func (c *converter) diskTarget(b *diskBuilder, i int, bus v1.DiskBus) {
	disks := c.spec.Domain.Devices.Disks
	name := disks[i].Name
	prefix, _ := targetPrefix(bus)
	parts := &b.parts[i]
	if t, ok := statusTarget(c.vmi, name); ok {
		parts.target.Dev, parts.unit = t, targetIndex(prefix, t)
		return
	}
	for j := range i {
		if disks[j].Name == name && b.parts[j].target.Dev != "" {
			t := b.parts[j].target.Dev
			parts.target.Dev, parts.unit = t, targetIndex(prefix, t)
			return
		}
	}
	next := &b.names.nextVD
	if prefix == "sd" {
		next = &b.names.nextSD
	}
	for ; *next < maxTargetNames; *next++ {
		if t := targetName(prefix, *next); !c.targetReserved(prefix, t) {
			parts.target.Dev, parts.unit = t, uint(*next)
			*next++
			return
		}
	}
}

// statusTarget returns the target status.volumeStatus records for a disk
// (the last entry of that name that has one).
func statusTarget(vmi *v1.VirtualMachineInstance, disk string) (string, bool) {
	statuses := vmi.Status.VolumeStatus
	for i := len(statuses) - 1; i >= 0; i-- {
		if statuses[i].Name == disk && statuses[i].Target != "" {
			return statuses[i].Target, true
		}
	}
	return "", false
}

// targetReserved tells whether status.volumeStatus keeps the target name
// for a disk whose bus has this prefix.
func (c *converter) targetReserved(prefix, name string) bool {
	if len(c.vmi.Status.VolumeStatus) == 0 {
		return false
	}
	disks := c.spec.Domain.Devices.Disks
	for k := range disks {
		p, ok := targetPrefix(diskBus(&disks[k]))
		if !ok || p != prefix {
			continue
		}
		if t, ok := statusTarget(c.vmi, disks[k].Name); ok && t == name {
			return true
		}
	}
	return false
}

// The first 26 names of each prefix, vda…vdz and sda…sdz, made once.
var vdNames, sdNames = firstNames("vd"), firstNames("sd")

func firstNames(prefix string) [26]string {
	var names [26]string
	for i := range names {
		names[i] = prefix + string(rune('a'+i))
	}
	return names
}

// targetName is the index-th name of a prefix in the kernel's sd naming:
// a…z, aa…az, ba…, zz, aaa….
func targetName(prefix string, index int) string {
	switch {
	case index < 26 && prefix == "vd":
		return vdNames[index]
	case index < 26 && prefix == "sd":
		return sdNames[index]
	}
	var letters []byte
	for index >= 0 {
		letters = append([]byte{byte('a' + index%26)}, letters...)
		index = index/26 - 1
	}
	return prefix + string(letters)
}

// targetIndex is the index of a name in its prefix's sequence (targetName
// backwards), or 0 when the name is not one of the prefix's.
func targetIndex(prefix, name string) uint {
	letters, ok := strings.CutPrefix(name, prefix)
	if !ok || len(letters) == 0 || len(letters) > 3 {
		return 0
	}
	n := 0
	for i := range len(letters) {
		l := letters[i]
		if l < 'a' || l > 'z' {
			return 0
		}
		n = n*26 + int(l-'a') + 1
	}
	return uint(n - 1)
}
