package api

import (
	"fmt"
	"math"
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/internal/pciaddr"
	"github.com/vmi2libvirt/vmi2libvirt/internal/vocab"
)

// Disk limits of KubeVirt.
const (
	maxSerialLen   = 256
	minBlockSize   = 512
	maxBlockSize   = 2 << 20
	busIDE         = "ide"
	bootOrderFirst = 1
)

var (
	serialSyntax = regexp.MustCompile(`^[A-Za-z0-9_.+-]+$`)

	// diskBuses are the words of vocab.DiskBuses, for errors.
	diskBuses = vocab.DiskBuses.Words()
)

// validateDisks applies KubeVirt's disk rules: unique names that are
// DNS-1123 labels, one kind (disk, lun or cdrom), a known bus that suits the
// kind (no IDE, no virtio CD-ROM, no read-only SATA disk), PCI addresses
// only on virtio and well-formed, serials of [A-Za-z0-9_.+-] up to 256
// characters, known cache, io and error policy, dedicated IO threads only on
// virtio, custom block sizes (powers of two from 512 to 2Mi, logical not
// above physical, 512 on SATA) — and the joins: every disk has a volume (a
// CD-ROM without one, an empty tray, needs a cluster feature), LUNs only on
// PVC or DataVolume volumes, downwardMetrics only on a virtio disk. This
// library's own checks are what KubeVirt's converter refuses, drops or
// leaves to libvirt to refuse: known tray states, LUNs on the scsi or
// virtio bus, shareable disks only (with cache none), io native only with
// cache none or none set (libvirt refuses the others), and a read-only disk
// for a read-only claim. (A serial on a LUN or CD-ROM is accepted:
// KubeVirt's converter leaves it out, and so does this library's.)
func validateDisks(vmi *v1.VirtualMachineInstance) field.ErrorList {
	var errs field.ErrorList
	disks := vmi.Spec.Domain.Devices.Disks
	volumes := volumesByName(vmi)
	seen := newUniqueNames(disksPath)
	for i := range disks {
		d := &disks[i]
		p := disksPath.Index(i)
		namePath := p.Child("name")
		if d.Name == "" {
			errs = append(errs, field.Required(namePath, "a disk needs the name of its volume"))
		} else {
			errs = appendMsgs(errs, namePath, d.Name, dns1123Label(d.Name))
			if e := seen.add(i, d.Name, ""); e != nil {
				errs = append(errs, e)
			}
		}
		kinds := 0
		for _, set := range []bool{d.Disk != nil, d.LUN != nil, d.CDRom != nil} {
			if set {
				kinds++
			}
		}
		if kinds > 1 {
			errs = append(errs, field.Invalid(p, d.Name, "a disk can only be one of disk, lun and cdrom"))
		}
		kind, bus, _ := vocab.DiskDevice(d)
		errs = append(errs, validateDiskBus(d, p, kind, bus)...)
		if d.Disk != nil && d.Disk.PciAddress != "" {
			pp := p.Child("disk", "pciAddress")
			if d.Disk.Bus != v1.DiskBusVirtio {
				errs = append(errs, field.Invalid(pp, d.Disk.PciAddress, "a PCI address can only be set on the virtio bus"))
			}
			if _, ok := pciaddr.Parse(d.Disk.PciAddress); !ok {
				errs = append(errs, field.Invalid(pp, d.Disk.PciAddress, "not a PCI address of the form 0000:00:00.0 (domain:bus:slot.function)"))
			}
		}
		if d.BootOrder != nil {
			errs = append(errs, checkBootOrder(p.Child("bootOrder"), *d.BootOrder)...)
		}
		if d.Serial != "" {
			if !serialSyntax.MatchString(d.Serial) {
				errs = append(errs, field.Invalid(p.Child("serial"), d.Serial, "must be made up of the characters [A-Za-z0-9_.+-]"))
			}
			if n := len([]rune(d.Serial)); n > maxSerialLen {
				errs = append(errs, field.TooLong(p.Child("serial"), "", maxSerialLen))
			}
		}
		if d.Cache != "" && !vocab.CacheModes.Has(string(d.Cache)) {
			errs = append(errs, field.NotSupported(p.Child("cache"), d.Cache, vocab.CacheModes))
		}
		if d.IO != "" && !vocab.IOModes.Has(string(d.IO)) {
			errs = append(errs, field.NotSupported(p.Child("io"), d.IO, vocab.IOModes))
		}
		if d.IO == v1.IONative && d.Cache != "" && d.Cache != v1.CacheNone {
			errs = append(errs, field.Invalid(p.Child("cache"), d.Cache, "io native needs cache none: libvirt refuses io='native' with the host's page cache"))
		}
		if d.ErrorPolicy != nil && !vocab.ErrorPolicies.Has(string(*d.ErrorPolicy)) {
			errs = append(errs, field.NotSupported(p.Child("errorPolicy"), *d.ErrorPolicy, vocab.ErrorPolicies))
		}
		if d.CDRom != nil && d.CDRom.Tray != "" && !vocab.TrayStates.Has(string(d.CDRom.Tray)) {
			errs = append(errs, field.NotSupported(p.Child("cdrom", "tray"), d.CDRom.Tray, vocab.TrayStates))
		}
		if isTrue(d.Shareable) {
			switch {
			case kind != vocab.DiskKindDisk && kind != "":
				errs = append(errs, field.Invalid(p.Child("shareable"), true, "KubeVirt shares disks only, not LUNs or CD-ROMs"))
			case d.Cache != "" && d.Cache != v1.CacheNone:
				errs = append(errs, field.Invalid(p.Child("cache"), d.Cache, "a shareable disk needs cache none"))
			}
		}
		errs = append(errs, validateBlockSize(d, p, bus)...)
		errs = append(errs, validateDiskVolume(d, p, kind, volumes, vmi.Spec.Volumes)...)
	}
	return errs
}

// validateDiskBus checks the bus against the kind of disk.
func validateDiskBus(d *v1.Disk, p *field.Path, kind string, bus v1.DiskBus) field.ErrorList {
	var errs field.ErrorList
	if bus != "" {
		bp := p.Child(kind, "bus")
		switch {
		case bus == busIDE:
			errs = append(errs, field.NotSupported(bp, bus, diskBuses))
		case !diskBuses.Has(string(bus)):
			errs = append(errs, field.NotSupported(bp, bus, diskBuses))
		case kind == vocab.DiskKindLUN && !vocab.LUNBuses.Has(string(bus)):
			errs = append(errs, field.NotSupported(bp, bus, vocab.LUNBuses))
		case bus == v1.DiskBusVirtio && kind == vocab.DiskKindCDROM:
			errs = append(errs, field.Invalid(bp, bus, "a CD-ROM cannot be on the virtio bus"))
		case bus == v1.DiskBusSATA && d.Disk != nil && d.Disk.ReadOnly:
			errs = append(errs, field.Invalid(bp, bus, "SATA hard disks cannot be read-only"))
		}
	}
	if isTrue(d.DedicatedIOThread) && bus != v1.DiskBusVirtio {
		errs = append(errs, field.Invalid(p.Child("dedicatedIOThread"), true, fmt.Sprintf("IO threads are not supported for disks on the %q bus", bus)))
	}
	return errs
}

// validateBlockSize checks a custom block size.
func validateBlockSize(d *v1.Disk, p *field.Path, bus v1.DiskBus) field.ErrorList {
	if d.BlockSize == nil || d.BlockSize.Custom == nil {
		return nil
	}
	bp := p.Child("blockSize")
	if enabled(d.BlockSize.MatchVolume) {
		return field.ErrorList{field.Invalid(bp, "custom and matchVolume", "block size matching cannot be enabled together with a custom size")}
	}
	c := d.BlockSize.Custom
	cp := bp.Child("custom")
	switch {
	case c.Logical > c.Physical:
		return field.ErrorList{field.Invalid(cp.Child("logical"), c.Logical, fmt.Sprintf("must not be greater than the physical size %d", c.Physical))}
	case bus == v1.DiskBusSATA && c.Logical != minBlockSize:
		return field.ErrorList{field.Invalid(cp.Child("logical"), c.Logical, "must be 512 on SATA")}
	case c.DiscardGranularity != nil && c.Logical != 0 && *c.DiscardGranularity%c.Logical != 0:
		return field.ErrorList{field.Invalid(cp.Child("discardGranularity"), *c.DiscardGranularity, fmt.Sprintf("must be a multiple of the logical size %d", c.Logical))}
	}
	var errs field.ErrorList
	for _, s := range []struct {
		name string
		size uint
	}{{"logical", c.Logical}, {"physical", c.Physical}} {
		switch {
		case s.size < minBlockSize:
			errs = append(errs, field.Invalid(cp.Child(s.name), s.size, "must be at least 512"))
		case s.size > maxBlockSize:
			errs = append(errs, field.Invalid(cp.Child(s.name), s.size, "must be at most 2097152 (2Mi)"))
		case s.size&(s.size-1) != 0:
			errs = append(errs, field.Invalid(cp.Child(s.name), s.size, "must be a power of 2"))
		}
	}
	return errs
}

// validateDiskVolume checks the join of a disk (of the given kind) with
// its volume, one of all.
func validateDiskVolume(d *v1.Disk, p *field.Path, kind string, volumes map[string]*v1.Volume, all []v1.Volume) field.ErrorList {
	if d.Name == "" {
		return nil
	}
	vol, ok := volumes[d.Name]
	switch {
	case !ok && d.CDRom != nil:
		return field.ErrorList{field.Invalid(p.Child("name"), d.Name,
			"no volume of this name: a CD-ROM with an empty tray needs KubeVirt's DeclarativeHotplugVolumes feature, which needs a cluster")}
	case !ok:
		return field.ErrorList{field.Invalid(p.Child("name"), d.Name, "no volume of this name in "+volumesPath.String())}
	}
	var errs field.ErrorList
	if d.LUN != nil && vol.PersistentVolumeClaim == nil && vol.DataVolume == nil {
		errs = append(errs, field.Invalid(p.Child("lun"), d.Name, "a LUN can only be a persistentVolumeClaim or dataVolume volume"))
	}
	if vol.DownwardMetrics != nil {
		switch {
		case d.Disk == nil:
			errs = append(errs, field.Required(p.Child("disk"), "a downwardMetrics volume must be a disk"))
		case d.Disk.Bus != "" && d.Disk.Bus != v1.DiskBusVirtio:
			errs = append(errs, field.Invalid(p.Child("disk", "bus"), d.Disk.Bus, "a downwardMetrics volume must be on the virtio bus"))
		}
	}
	if _, _, readOnly := vocab.DiskDevice(d); vol.PersistentVolumeClaim != nil && vol.PersistentVolumeClaim.ReadOnly && kind != "" && !readOnly {
		index := 0
		for i := range all {
			if &all[i] == vol {
				index = i
			}
		}
		errs = append(errs, field.Invalid(volumesPath.Index(index).Child("persistentVolumeClaim", "readOnly"), true,
			fmt.Sprintf("a read-only claim needs a read-only disk (%s)", p.Child(kind, "readonly"))))
	}
	return errs
}

// validateBootOrder checks, as KubeVirt does, that no two devices (disks,
// then interfaces) share a boot order and that interface boot orders are
// above 0 (disk boot orders are checked with the disks); boot orders above
// what libvirt reads (2^32-1) are this library's own check.
func validateBootOrder(vmi *v1.VirtualMachineInstance) field.ErrorList {
	var errs field.ErrorList
	owner := map[uint]*field.Path{}
	claim := func(order uint, p *field.Path) {
		if prev, ok := owner[order]; ok {
			errs = append(errs, field.Duplicate(p, fmt.Sprintf("%d (also %s)", order, prev)))
			return
		}
		owner[order] = p
	}
	for i, d := range vmi.Spec.Domain.Devices.Disks {
		if d.BootOrder != nil {
			claim(*d.BootOrder, disksPath.Index(i).Child("bootOrder"))
		}
	}
	for i, iface := range vmi.Spec.Domain.Devices.Interfaces {
		if iface.BootOrder == nil {
			continue
		}
		p := ifacesPath.Index(i).Child("bootOrder")
		if e := checkBootOrder(p, *iface.BootOrder); e != nil {
			errs = append(errs, e...)
			continue
		}
		claim(*iface.BootOrder, p)
	}
	return errs
}

// maxBootOrder is the largest boot order libvirt reads (an unsigned int).
const maxBootOrder = math.MaxUint32

// checkBootOrder checks one boot order: from 1 to maxBootOrder.
func checkBootOrder(p *field.Path, order uint) field.ErrorList {
	switch {
	case order < bootOrderFirst:
		return field.ErrorList{field.Invalid(p, order, "must be greater than 0")}
	case order > maxBootOrder:
		return field.ErrorList{field.Invalid(p, order, "must be at most 4294967295, the largest boot order libvirt reads")}
	}
	return nil
}

// volumesByName indexes the volumes by name (the first of a name wins).
func volumesByName(vmi *v1.VirtualMachineInstance) map[string]*v1.Volume {
	m := make(map[string]*v1.Volume, len(vmi.Spec.Volumes))
	for i := range vmi.Spec.Volumes {
		if _, ok := m[vmi.Spec.Volumes[i].Name]; !ok {
			m[vmi.Spec.Volumes[i].Name] = &vmi.Spec.Volumes[i]
		}
	}
	return m
}
