package convert

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// disks writes one <disk> per spec.domain.devices.disks entry, in spec
// order, as KubeVirt's converter does: device kind and bus, target name,
// model, serial, boot order, driver (cache, io, error policy, discard,
// queues, IO threads), readonly, shareable, alias ua-<name>, and the host
// side of its volume from the Layout. Every volume must be used by a disk
// (api.Default adds a disk for each volume without one).
func (c *converter) disks(d *libvirtxml.Domain) error {
	if c.ioThreadsErr != nil {
		return c.ioThreadsErr
	}
	specDisks := c.spec.Domain.Devices.Disks
	b := diskBuilder{
		threads: newIOThreadAssigner(c.ioThreads),
		parts:   make([]diskParts, len(specDisks)),
	}
	if len(specDisks) > 0 {
		d.Devices.Disks = make([]libvirtxml.DomainDisk, 0, len(specDisks))
	}
	var probs problems
	for i := range specDisks {
		disk, err := c.disk(&b, i)
		if err != nil {
			if err := probs.add(err); err != nil {
				return err
			}
			continue
		}
		d.Devices.Disks = append(d.Devices.Disks, disk)
	}
	for i := range c.spec.Volumes {
		if name := c.spec.Volumes[i].Name; !c.volumeUsed(name) {
			probs.add(field.Invalid(volumePath(i).Child("name"), name, "no disk uses this volume"))
		}
	}
	return probs.err()
}

// volumeUsed tells whether a disk (or a filesystem: filesystems are
// refused by the unsupported area, and their volume is not a second
// problem) uses the named volume.
func (c *converter) volumeUsed(name string) bool {
	devs := &c.spec.Domain.Devices
	for i := range devs.Disks {
		if devs.Disks[i].Name == name {
			return true
		}
	}
	for i := range devs.Filesystems {
		if devs.Filesystems[i].Name == name {
			return true
		}
	}
	return false
}

// volumeIndex returns the index of the first spec.volumes entry with the
// given name.
func (c *converter) volumeIndex(name string) (int, bool) {
	for i := range c.spec.Volumes {
		if c.spec.Volumes[i].Name == name {
			return i, true
		}
	}
	return 0, false
}

// diskParts are what one disk points to. The disks area allocates the
// parts of all the VMI's disks in one slice, one diskParts per
// spec.domain.devices.disks entry; what only some disks have (a backing
// store, a SCSI address, a block device) is allocated for those disks
// alone.
type diskParts struct {
	target libvirtxml.DomainDiskTarget
	// unit is the index of the target's name in its prefix's sequence
	// (disknames.go).
	unit      uint
	alias     libvirtxml.DomainAlias
	driver    libvirtxml.DomainDiskDriver
	queues    uint
	ioThread  uint
	readOnly  libvirtxml.DomainDiskReadOnly
	shareable libvirtxml.DomainDiskShareable
	boot      libvirtxml.DomainDeviceBoot
	source    libvirtxml.DomainDiskSource
	file      libvirtxml.DomainDiskSourceFile
}

// driveAddressParts are a SCSI disk's address, unit <unit> of bus 0 of
// controller 0, and what it points to.
type driveAddressParts struct {
	address               libvirtxml.DomainAddress
	drive                 libvirtxml.DomainAddressDrive
	controller, bus, unit uint
}

// backingParts are a disk's <backingStore> and what it points to.
type backingParts struct {
	store  libvirtxml.DomainDiskBackingStore
	format libvirtxml.DomainDiskFormat
	source libvirtxml.DomainDiskSource
	file   libvirtxml.DomainDiskSourceFile
	block  libvirtxml.DomainDiskSourceBlock
}

// diskBuilder carries the state shared by a VMI's disks: target names and
// IO threads are handed out in spec order.
type diskBuilder struct {
	threads ioThreadAssigner
	names   targetNamer
	parts   []diskParts // one per spec.domain.devices.disks entry
}

// diskDevice is what a disk's device kind says: libvirt's device name, the
// field it was set under, its bus, whether it is read-only, and a CD-ROM's
// tray.
type diskDevice struct {
	device   string // "disk", "lun" or "cdrom"
	bus      v1.DiskBus
	readOnly bool
	tray     v1.TrayState
}

var diskBuses = []string{string(v1.DiskBusVirtio), string(v1.DiskBusSATA), string(v1.DiskBusSCSI), string(v1.DiskBusUSB)}

// deviceOf reads and checks the device kind of a disk.
func deviceOf(disk *v1.Disk, p itemPath) (diskDevice, error) {
	var dev diskDevice
	kinds := 0
	if t := disk.Disk; t != nil {
		kinds++
		dev = diskDevice{device: "disk", bus: t.Bus, readOnly: t.ReadOnly}
	}
	if t := disk.LUN; t != nil {
		kinds++
		dev = diskDevice{device: "lun", bus: t.Bus, readOnly: t.ReadOnly}
	}
	if t := disk.CDRom; t != nil {
		kinds++
		dev = diskDevice{device: "cdrom", bus: t.Bus, readOnly: t.ReadOnly == nil || *t.ReadOnly, tray: t.Tray}
	}
	switch {
	case kinds == 0:
		return dev, field.Required(p.path(), "one of disk, lun or cdrom")
	case kinds > 1:
		return dev, field.Invalid(p.path(), disk.Name, "only one of disk, lun or cdrom may be set")
	}
	busPath := func() *field.Path { return p.Child(dev.device, "bus") }
	switch _, known := targetPrefix(dev.bus); {
	case dev.bus == "":
		return dev, field.Required(busPath(), "api.Default sets it")
	case !known:
		return dev, field.NotSupported(busPath(), dev.bus, diskBuses)
	case dev.device == "cdrom" && dev.bus == v1.DiskBusVirtio:
		return dev, field.Invalid(busPath(), dev.bus, "a CD-ROM cannot be on the virtio bus")
	case dev.device == "lun" && dev.bus != v1.DiskBusSCSI && dev.bus != v1.DiskBusVirtio:
		return dev, field.NotSupported(busPath(), dev.bus, []string{string(v1.DiskBusSCSI), string(v1.DiskBusVirtio)})
	case dev.device == "disk" && dev.bus == v1.DiskBusSATA && dev.readOnly:
		return dev, field.Invalid(p.Child("disk", "readonly"), true, "SATA hard disks cannot be read-only")
	}
	switch dev.tray {
	case "", v1.TrayStateOpen, v1.TrayStateClosed:
	default:
		return dev, field.NotSupported(p.Child("cdrom", "tray"), dev.tray,
			[]string{string(v1.TrayStateOpen), string(v1.TrayStateClosed)})
	}
	return dev, nil
}

var (
	// serialPattern is the serial syntax KubeVirt admits (and libvirt's
	// schema accepts).
	serialPattern = regexp.MustCompile(`^[A-Za-z0-9_.+-]+$`)

	diskCaches = []string{string(v1.CacheNone), string(v1.CacheWriteThrough), string(v1.CacheWriteBack)}
	diskIOs    = []string{string(v1.IOThreads), string(v1.IONative)}
	errorPols  = []string{
		string(v1.DiskErrorPolicyStop), string(v1.DiskErrorPolicyIgnore),
		string(v1.DiskErrorPolicyReport), string(v1.DiskErrorPolicyEnospace),
	}
)

// disk converts spec.domain.devices.disks[i].
func (c *converter) disk(b *diskBuilder, i int) (libvirtxml.DomainDisk, error) {
	spec := &c.spec.Domain.Devices.Disks[i]
	p := itemPath{disksPath, i}
	dev, err := deviceOf(spec, p)
	if err != nil {
		return libvirtxml.DomainDisk{}, err
	}
	if err := checkDiskFields(spec, dev, p); err != nil {
		return libvirtxml.DomainDisk{}, err
	}

	parts := &b.parts[i]
	c.diskTarget(b, i, dev.bus)
	parts.target.Bus = string(dev.bus)
	parts.target.Tray = string(dev.tray)
	parts.alias.Name = c.text.join(UserAliasPrefix, spec.Name)
	out := libvirtxml.DomainDisk{
		Device: dev.device,
		Target: &parts.target,
		Serial: spec.Serial,
		Alias:  &parts.alias,
	}
	// SCSI disks and LUNs sit at the unit their name gives on controller 0,
	// as KubeVirt places them; a SCSI CD-ROM gets no address and libvirt
	// assigns one, as with KubeVirt.
	if dev.bus == v1.DiskBusSCSI && dev.device != "cdrom" {
		a := new(driveAddressParts)
		a.unit = parts.unit
		a.drive = libvirtxml.DomainAddressDrive{Controller: &a.controller, Bus: &a.bus, Unit: &a.unit}
		a.address.Drive = &a.drive
		out.Address = &a.address
	}
	if spec.Disk != nil && spec.Disk.PciAddress != "" {
		if dev.bus != v1.DiskBusVirtio {
			return out, field.Invalid(p.Child("disk", "pciAddress"), spec.Disk.PciAddress, "only virtio disks have a PCI address")
		}
		addr, err := parsePCIAddress(spec.Disk.PciAddress)
		if err != nil {
			return out, field.Invalid(p.Child("disk", "pciAddress"), spec.Disk.PciAddress, err.Error())
		}
		out.Address = &libvirtxml.DomainAddress{PCI: addr}
	}
	if dev.device == "disk" && dev.bus == v1.DiskBusVirtio {
		out.Model = c.virtioModel
	}
	if dev.readOnly {
		out.ReadOnly = &parts.readOnly
	}
	cache := string(spec.Cache)
	if spec.Shareable != nil && *spec.Shareable {
		if cache == "" {
			cache = string(v1.CacheNone)
		}
		out.Shareable = &parts.shareable
	}
	driver := &parts.driver
	*driver = libvirtxml.DomainDiskDriver{Name: "qemu", Cache: cache, IO: string(spec.IO)}
	if dev.device != "cdrom" {
		driver.Discard = "unmap"
	}
	if m := c.spec.Domain.Devices.BlockMultiQueue; m != nil && *m && dev.bus == v1.DiskBusVirtio {
		parts.queues = c.vcpus()
		driver.Queues = &parts.queues
	}
	out.Driver = driver
	if spec.BootOrder != nil {
		parts.boot.Order = *spec.BootOrder
		out.Boot = &parts.boot
	}
	if bs := spec.BlockSize; bs != nil && bs.Custom != nil {
		out.BlockIO = &libvirtxml.DomainDiskBlockIO{
			LogicalBlockSize:  bs.Custom.Logical,
			PhysicalBlockSize: bs.Custom.Physical,
		}
	}

	if err := c.diskSource(&out, parts, spec, dev, p); err != nil {
		return out, err
	}

	out.Driver.ErrorPolicy = string(v1.DiskErrorPolicyStop)
	if spec.ErrorPolicy != nil {
		out.Driver.ErrorPolicy = string(*spec.ErrorPolicy)
	}
	if dev.bus == v1.DiskBusVirtio {
		b.threads.assign(spec, out.Driver, &parts.ioThread)
	} else if hasDedicatedIOThread(spec) && (dev.bus != v1.DiskBusSCSI || c.scsiControllerDriver() == nil) {
		return out, field.Invalid(p.Child("dedicatedIOThread"), true,
			fmt.Sprintf("IO threads are not supported for disks on a %s bus", dev.bus))
	}
	return out, nil
}

// checkDiskFields refuses the values of a disk's fields that the domain
// cannot carry. A disk's tag is accepted: KubeVirt writes device metadata
// only for tagged interfaces, host devices and GPUs, so a disk tag changes
// nothing there either.
func checkDiskFields(spec *v1.Disk, dev diskDevice, p itemPath) error {
	switch {
	case spec.Serial != "" && dev.device != "disk":
		return field.Invalid(p.Child("serial"), spec.Serial, "KubeVirt gives a serial to disks only, not to LUNs or CD-ROMs")
	case spec.Serial != "" && !serialPattern.MatchString(spec.Serial):
		return field.Invalid(p.Child("serial"), spec.Serial, "must be made of the characters [A-Za-z0-9_.+-]")
	case spec.Cache != "" && !slices.Contains(diskCaches, string(spec.Cache)):
		return field.NotSupported(p.Child("cache"), spec.Cache, diskCaches)
	case spec.IO != "" && !slices.Contains(diskIOs, string(spec.IO)):
		return field.NotSupported(p.Child("io"), spec.IO, diskIOs)
	case spec.ErrorPolicy != nil && !slices.Contains(errorPols, string(*spec.ErrorPolicy)):
		return field.NotSupported(p.Child("errorPolicy"), *spec.ErrorPolicy, errorPols)
	case spec.BootOrder != nil && *spec.BootOrder < 1:
		return field.Invalid(p.Child("bootOrder"), *spec.BootOrder, "must be at least 1")
	case spec.ChangedBlockTracking != nil && *spec.ChangedBlockTracking:
		return field.Forbidden(p.Child("changedBlockTracking"), "changed block tracking is not supported")
	}
	if spec.Shareable != nil && *spec.Shareable {
		if dev.device != "disk" {
			return field.Invalid(p.Child("shareable"), true, "KubeVirt shares disks only, not LUNs or CD-ROMs")
		}
		if spec.Cache != "" && spec.Cache != v1.CacheNone {
			return field.Invalid(p.Child("cache"), spec.Cache, "a shareable disk needs cache none")
		}
	}
	if bs := spec.BlockSize; bs != nil && bs.Custom != nil && bs.Custom.DiscardGranularity != nil {
		return field.Forbidden(p.Child("blockSize", "custom", "discardGranularity"),
			"libvirt 9.0 has no blockio discard_granularity")
	}
	if bs := spec.BlockSize; bs != nil && bs.Custom == nil && bs.MatchVolume != nil &&
		(bs.MatchVolume.Enabled == nil || *bs.MatchVolume.Enabled) {
		return field.Forbidden(p.Child("blockSize", "matchVolume"),
			"matching the volume's block size needs a look at the host; set blockSize.custom")
	}
	return nil
}

// reservationLayout is a Layout that runs its own persistent-reservation
// helper (qemu-pr-helper) for LUNs: ReservationSocket is its socket. For
// other layouts, libvirt starts a managed helper.
type reservationLayout interface {
	ReservationSocket() string
}

// diskSource fills the host side of a disk from its volume.
func (c *converter) diskSource(out *libvirtxml.DomainDisk, parts *diskParts, spec *v1.Disk, dev diskDevice, p itemPath) error {
	index, ok := c.volumeIndex(spec.Name)
	if !ok {
		if dev.device != "cdrom" {
			return field.NotFound(p.Child("name"), spec.Name)
		}
		// A CD-ROM without a volume is an empty drive.
		parts.source.Block = &libvirtxml.DomainDiskSourceBlock{}
		out.Source = &parts.source
		out.Driver.Type = "raw"
		out.Driver.Discard = "unmap"
		return nil
	}
	vol := &c.spec.Volumes[index]
	src, err := c.opts.Layout.Volume(c.vmi, index)
	if err != nil {
		return err
	}
	kind, n := volumeKindOf(vol)
	if n != 1 {
		return field.Invalid(volumePath(index), vol.Name, "a volume has exactly one source")
	}

	switch src.Type {
	case "", "file":
		parts.file.File = src.Path
		parts.source.File = &parts.file
	case "block":
		parts.source.Block = &libvirtxml.DomainDiskSourceBlock{Dev: src.Path}
	default:
		return fmt.Errorf("convert: layout gave volume %q the disk type %q; want file or block", vol.Name, src.Type)
	}
	out.Source = &parts.source
	out.Driver.Type = src.Format
	if src.BackingPath != "" {
		b := new(backingParts)
		if strings.HasPrefix(src.BackingPath, "/dev/") {
			b.block.Dev = src.BackingPath
			b.source.Block = &b.block
		} else {
			b.file.File = src.BackingPath
			b.source.File = &b.file
		}
		b.format.Type = src.BackingFormat
		b.store = libvirtxml.DomainDiskBackingStore{Format: &b.format, Source: &b.source}
		out.BackingStore = &b.store
	}
	if dev.device == "cdrom" && discardOnCDROM(kind) {
		out.Driver.Discard = "unmap"
	}

	switch kind {
	case volDownwardMetrics:
		if dev.device != "disk" || dev.bus != v1.DiskBusVirtio {
			return field.Invalid(p.path(), spec.Name, "a downwardMetrics volume needs a disk on the virtio bus")
		}
		// KubeVirt gives the metrics disk a plain read-only driver.
		out.ReadOnly = &parts.readOnly
		*out.Driver = libvirtxml.DomainDiskDriver{Name: "qemu", Type: "raw"}
	case volPVC:
		if vol.PersistentVolumeClaim.ReadOnly && !dev.readOnly {
			return field.Invalid(volumePath(index).Child("persistentVolumeClaim", "readOnly"), true,
				fmt.Sprintf("a read-only claim needs a read-only disk (%s)", p.Child(dev.device, "readonly")))
		}
	}

	if dev.device == "lun" {
		if src.Type != "block" {
			return field.Invalid(p.Child("lun"), spec.Name,
				fmt.Sprintf("a LUN needs a block device; %s is a file on the host", volumePath(index)))
		}
		if spec.LUN.Reservation {
			res := &libvirtxml.DomainDiskReservations{Managed: "yes"}
			if rl, ok := c.opts.Layout.(reservationLayout); ok {
				res = &libvirtxml.DomainDiskReservations{
					Managed: "no",
					Source: &libvirtxml.DomainDiskReservationsSource{
						UNIX: &libvirtxml.DomainChardevSourceUNIX{Path: rl.ReservationSocket(), Mode: "client"},
					},
				}
			}
			out.Source.Reservations = res
		}
	}
	return nil
}
