package convert

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/internal/vocab"
)

// disks writes one <disk> per spec.domain.devices.disks entry, in spec
// order, as KubeVirt's converter does: device kind and bus, target name,
// model, serial, boot order, driver (cache, io, error policy, discard,
// queues, IO threads), readonly, shareable, alias ua-<name>, and the host
// side of its volume from the Layout. (api.Default adds a disk for each
// volume without one; api.Validate holds the disks to KubeVirt's rules.)
func (c *converter) disks(d *libvirtxml.Domain) error {
	specDisks := c.spec.Domain.Devices.Disks
	b := diskBuilder{
		threads: c.facts.ioThreads.assigner(),
		parts:   make([]diskParts, len(specDisks)),
	}
	if n := c.facts.ioThreads.pool; n > 0 {
		b.pool = &libvirtxml.DomainDiskIOThreads{IOThread: make([]libvirtxml.DomainDiskIOThread, n)}
		for i := range b.pool.IOThread {
			b.pool.IOThread[i].ID = uint(i) + 1
		}
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
	return probs.err()
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
	// pool is the supplemental IO-thread pool every virtio disk shares
	// (nil without one).
	pool  *libvirtxml.DomainDiskIOThreads
	names targetNamer
	parts []diskParts // one per spec.domain.devices.disks entry
}

// diskDevice is what a disk's device kind says: libvirt's device name, its
// bus, whether it is read-only, and a CD-ROM's tray.
type diskDevice struct {
	device   string // "disk", "lun" or "cdrom"
	bus      v1.DiskBus
	readOnly bool
	tray     v1.TrayState
}

// deviceOf reads the device of a disk (vocab.DiskDevice: api.Validate
// allows one kind; api.Default sets disk when none is).
func deviceOf(disk *v1.Disk) diskDevice {
	kind, bus, readOnly := vocab.DiskDevice(disk)
	dev := diskDevice{device: kind, bus: bus, readOnly: readOnly}
	switch {
	case kind == "":
		dev.device = vocab.DiskKindDisk
	case disk.CDRom != nil:
		dev.tray = disk.CDRom.Tray
	}
	return dev
}

// disk converts spec.domain.devices.disks[i].
func (c *converter) disk(b *diskBuilder, i int) (libvirtxml.DomainDisk, error) {
	spec := &c.spec.Domain.Devices.Disks[i]
	p := itemPath{disksPath, i}
	dev := deviceOf(spec)
	if err := c.checkBlockSize(spec, p); err != nil {
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
		Alias:  &parts.alias,
	}
	// KubeVirt gives a serial to disks only; a LUN's or CD-ROM's is left
	// out (see "What Convert leaves out").
	if dev.device == vocab.DiskKindDisk {
		out.Serial = spec.Serial
	}
	// SCSI disks and LUNs sit at the unit their name gives on controller 0,
	// as KubeVirt places them; a SCSI CD-ROM gets no address and libvirt
	// assigns one, as with KubeVirt.
	if dev.bus == v1.DiskBusSCSI && dev.device != vocab.DiskKindCDROM {
		a := new(driveAddressParts)
		a.unit = parts.unit
		a.drive = libvirtxml.DomainAddressDrive{Controller: &a.controller, Bus: &a.bus, Unit: &a.unit}
		a.address.Drive = &a.drive
		out.Address = &a.address
	}
	if spec.Disk != nil && spec.Disk.PciAddress != "" && dev.bus == v1.DiskBusVirtio {
		out.Address = guestPCIAddress(spec.Disk.PciAddress)
	}
	if dev.device == vocab.DiskKindDisk && dev.bus == v1.DiskBusVirtio {
		out.Model = c.facts.virtioModel
	}
	if dev.readOnly {
		out.ReadOnly = &parts.readOnly
	}
	cache := string(spec.Cache)
	if spec.IO == v1.IONative && cache == "" {
		// libvirt refuses io='native' without cache none; KubeVirt's
		// virt-launcher sets none where the cache is not set and the file
		// system has direct I/O, as the hosts it runs on have.
		cache = string(v1.CacheNone)
	}
	if switchedOn(spec.Shareable) {
		if cache == "" {
			cache = string(v1.CacheNone)
		}
		out.Shareable = &parts.shareable
	}
	driver := &parts.driver
	*driver = libvirtxml.DomainDiskDriver{Name: "qemu", Cache: cache, IO: string(spec.IO)}
	if dev.device != vocab.DiskKindCDROM {
		driver.Discard = "unmap"
	}
	if switchedOn(c.spec.Domain.Devices.BlockMultiQueue) && dev.bus == v1.DiskBusVirtio {
		parts.queues = c.facts.topology.count()
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
			// KubeVirt's libvirt leaves a granularity of 0 out, as
			// libvirt before 11.6 does.
			DiscardGranularity: bs.Custom.DiscardGranularity,
		}
		if g := bs.Custom.DiscardGranularity; g != nil && *g == 0 {
			out.BlockIO.DiscardGranularity = nil
		}
	}

	if err := c.diskSource(&out, parts, spec, dev, p); err != nil {
		return out, err
	}
	if out.Shareable != nil && out.ReadOnly == nil && out.Driver.Type == "qcow2" {
		// KubeVirt writes it; libvirt refuses shared write access to a
		// qcow2 image at define (the layout makes containerDisk and
		// ephemeral overlays and empty disks qcow2 files). A read-only
		// one it defines and QEMU starts.
		return out, field.Invalid(p.Child("shareable"), true,
			fmt.Sprintf("libvirt refuses to share a writable qcow2 image; %s is one on this host", volumeOfDisk(c, spec.Name)))
	}

	out.Driver.ErrorPolicy = string(v1.DiskErrorPolicyStop)
	if spec.ErrorPolicy != nil {
		out.Driver.ErrorPolicy = string(*spec.ErrorPolicy)
	}
	// Only virtio disks have IO threads (api.Validate holds dedicated
	// ones to virtio, as KubeVirt does).
	if dev.bus == v1.DiskBusVirtio {
		if parts.ioThread = b.threads.next(spec); parts.ioThread != 0 {
			out.Driver.IOThread = &parts.ioThread
		}
		out.Driver.IOThreads = b.pool
		out.Driver.IOMMU = c.iommuOn()
	}
	return out, nil
}

// checkBlockSize refuses the block sizes this host cannot give a disk: a
// discard granularity where its libvirt has none (LackDiscardGranularity), and the volume's own block
// size (which the converter cannot look up). A disk's tag is accepted:
// KubeVirt writes device metadata only for tagged interfaces, host devices
// and GPUs, so a disk tag changes nothing there either.
func (c *converter) checkBlockSize(spec *v1.Disk, p itemPath) error {
	bs := spec.BlockSize
	switch {
	case bs == nil:
	case bs.Custom != nil && bs.Custom.DiscardGranularity != nil && !c.opts.HostFacts.Has(LackDiscardGranularity):
		return refuseLack(p.Child("blockSize", "custom", "discardGranularity"), LackDiscardGranularity)
	case bs.Custom == nil && bs.MatchVolume != nil && optionalOn(bs.MatchVolume.Enabled):
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

// diskSource fills the host side of a disk from its volume, as the Layout
// places it. A disk without a volume (which api.Validate refuses) has no
// source; a CD-ROM without one is an empty drive.
func (c *converter) diskSource(out *libvirtxml.DomainDisk, parts *diskParts, spec *v1.Disk, dev diskDevice, p itemPath) error {
	index, ok := c.volumeIndex(spec.Name)
	if !ok {
		if dev.device == vocab.DiskKindCDROM {
			parts.source.Block = &libvirtxml.DomainDiskSourceBlock{}
			out.Source = &parts.source
			out.Driver.Type = "raw"
			out.Driver.Discard = "unmap"
		}
		return nil
	}
	vol := &c.spec.Volumes[index]
	src, err := c.opts.Layout.Volume(c.vmi, index)
	if err != nil {
		return err
	}
	kind, _ := volumeKindOf(vol)

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
	if dev.device == vocab.DiskKindCDROM && discardOnCDROM(kind) {
		out.Driver.Discard = "unmap"
	}

	if kind == volDownwardMetrics {
		// KubeVirt gives the metrics disk (a virtio disk: api.Validate) a
		// plain read-only driver.
		out.ReadOnly = &parts.readOnly
		*out.Driver = libvirtxml.DomainDiskDriver{Name: "qemu", Type: "raw"}
	}

	if dev.device == vocab.DiskKindLUN {
		// The layout decides whether the volume is a block device.
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

// volumeOfDisk is the path of the volume of the disk named name, for a
// refusal (the disk has one: the disk converted).
func volumeOfDisk(c *converter, name string) *field.Path {
	index, _ := c.volumeIndex(name)
	return volumePath(index)
}
