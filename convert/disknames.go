package convert

import v1 "kubevirt.io/api/core/v1"

// busPrefix is the target name prefix of each disk bus, as KubeVirt names
// them: virtio disks are vda, vdb…; SATA, SCSI and USB disks share one
// sequence sda, sdb….
var busPrefix = map[v1.DiskBus]string{
	v1.DiskBusVirtio: "vd",
	v1.DiskBusSATA:   "sd",
	v1.DiskBusSCSI:   "sd",
	v1.DiskBusUSB:    "sd",
}

// targetNamer hands out disk target names in KubeVirt's order: names a disk
// already has (spec order does not matter for those: they come from
// status.volumeStatus[].target) are kept, and every other disk gets the
// lowest free name of its prefix, in spec order.
type targetNamer struct {
	byDisk map[string]string          // disk name -> target already decided
	used   map[string]map[string]bool // prefix -> target names taken
}

// newTargetNamer reserves the targets that status.volumeStatus records for
// the VMI's disks.
func newTargetNamer(vmi *v1.VirtualMachineInstance) *targetNamer {
	n := &targetNamer{byDisk: map[string]string{}, used: map[string]map[string]bool{}}
	known := map[string]string{}
	for _, vs := range vmi.Status.VolumeStatus {
		if vs.Target != "" {
			known[vs.Name] = vs.Target
		}
	}
	for _, disk := range vmi.Spec.Domain.Devices.Disks {
		prefix, ok := busPrefix[diskBus(&disk)]
		if !ok {
			continue
		}
		if t, ok := known[disk.Name]; ok {
			n.byDisk[disk.Name] = t
			n.take(prefix, t)
		}
	}
	return n
}

func (n *targetNamer) take(prefix, name string) {
	if n.used[prefix] == nil {
		n.used[prefix] = map[string]bool{}
	}
	n.used[prefix][name] = true
}

// name returns the target name of a disk on bus and its index in its
// prefix's sequence (sda is 0, sdb 1…), which is also the unit of a SCSI
// disk on the VMI's one SCSI controller.
func (n *targetNamer) name(disk string, bus v1.DiskBus) (string, uint) {
	prefix := busPrefix[bus]
	// 26 + 26² + 26³ names per prefix, as many as KubeVirt tries.
	const limit = 26 + 26*26 + 26*26*26
	if t, ok := n.byDisk[disk]; ok {
		for i := range limit {
			if targetName(prefix, i) == t {
				return t, uint(i)
			}
		}
		return t, 0
	}
	for i := range limit {
		t := targetName(prefix, i)
		if !n.used[prefix][t] {
			n.take(prefix, t)
			n.byDisk[disk] = t
			return t, uint(i)
		}
	}
	return "", 0
}

// targetName is the index-th name of a prefix in the kernel's sd naming:
// a…z, aa…az, ba…, zz, aaa….
func targetName(prefix string, index int) string {
	var letters []byte
	for index >= 0 {
		letters = append([]byte{byte('a' + index%26)}, letters...)
		index = index/26 - 1
	}
	return prefix + string(letters)
}

// diskBus returns the bus of whichever device kind the disk has.
func diskBus(disk *v1.Disk) v1.DiskBus {
	switch {
	case disk.Disk != nil:
		return disk.Disk.Bus
	case disk.LUN != nil:
		return disk.LUN.Bus
	case disk.CDRom != nil:
		return disk.CDRom.Bus
	}
	return ""
}
