// Package vocab declares, once each, the vocabularies of a
// VirtualMachineInstance on amd64: the words a field may take, in the order
// an error lists them, as KubeVirt v1.8's admission accepts them (or, where
// a comment says so, as this library's own rule), and, for the words the
// converter maps, what each becomes in the libvirt domain.
//
// Package api refuses any other word, with the list (field.NotSupported);
// package convert reads the mappings and writes the other words as they
// are. Neither declares a vocabulary of its own.
package vocab

import (
	"slices"

	v1 "kubevirt.io/api/core/v1"
)

// Words is a vocabulary whose words reach the domain as they are.
type Words []string

// Has tells whether word is one of the vocabulary's.
func (w Words) Has(word string) bool { return slices.Contains(w, word) }

// A Mapping is a vocabulary whose words each become a value of the domain.
type Mapping []struct{ Word, Domain string }

// Words returns the mapping's words, in order.
func (m Mapping) Words() Words {
	out := make(Words, len(m))
	for i, e := range m {
		out[i] = e.Word
	}
	return out
}

// Lookup returns what word becomes in the domain; ok is false for a word
// the vocabulary does not have.
func (m Mapping) Lookup(word string) (domain string, ok bool) {
	for _, e := range m {
		if e.Word == word {
			return e.Domain, true
		}
	}
	return "", false
}

// The device kinds of a disk, as the VMI's fields (disks[].disk, lun,
// cdrom) and libvirt's <disk device="…"> both name them.
const (
	DiskKindDisk  = "disk"
	DiskKindLUN   = "lun"
	DiskKindCDROM = "cdrom"
)

// DiskDevice reads a disk's device: its kind, the first of disk, lun and
// cdrom that is set ("" when none is: api.Default sets disk then), its bus,
// and whether the guest sees it read-only (a disk or LUN that says so, a
// CD-ROM unless it says otherwise).
func DiskDevice(d *v1.Disk) (kind string, bus v1.DiskBus, readOnly bool) {
	switch {
	case d.Disk != nil:
		return DiskKindDisk, d.Disk.Bus, d.Disk.ReadOnly
	case d.LUN != nil:
		return DiskKindLUN, d.LUN.Bus, d.LUN.ReadOnly
	case d.CDRom != nil:
		return DiskKindCDROM, d.CDRom.Bus, d.CDRom.ReadOnly == nil || *d.CDRom.ReadOnly
	}
	return "", "", false
}

// Disks and volumes.
var (
	// DiskBuses maps each disk bus (disks[].disk.bus, lun.bus, cdrom.bus)
	// to the prefix of its disks' target names, as KubeVirt names them:
	// virtio disks are vda, vdb…; SATA, SCSI and USB disks share one
	// sequence sda, sdb…. KubeVirt refuses ide, and virtio for CD-ROMs.
	DiskBuses = Mapping{
		{string(v1.DiskBusVirtio), "vd"},
		{string(v1.DiskBusSCSI), "sd"},
		{string(v1.DiskBusSATA), "sd"},
		{string(v1.DiskBusUSB), "sd"},
	}
	// LUNBuses are the buses a LUN may be on (this library's own rule: a
	// SCSI passthrough device needs a SCSI or virtio-blk transport).
	LUNBuses = Words{string(v1.DiskBusSCSI), string(v1.DiskBusVirtio)}
	// CacheModes are the disk cache modes (disks[].cache).
	CacheModes = Words{string(v1.CacheNone), string(v1.CacheWriteThrough), string(v1.CacheWriteBack)}
	// IOModes are the disk IO modes (disks[].io).
	IOModes = Words{string(v1.IONative), string(v1.IOThreads)}
	// ErrorPolicies are the disk error policies (disks[].errorPolicy).
	ErrorPolicies = Words{
		string(v1.DiskErrorPolicyStop), string(v1.DiskErrorPolicyIgnore),
		string(v1.DiskErrorPolicyReport), string(v1.DiskErrorPolicyEnospace),
	}
	// TrayStates are the states of a CD-ROM's tray (this library's own
	// check: KubeVirt writes any value into the domain).
	TrayStates = Words{string(v1.TrayStateOpen), string(v1.TrayStateClosed)}
	// HostDiskTypes are the types of a hostDisk volume.
	HostDiskTypes = Words{string(v1.HostDiskExists), string(v1.HostDiskExistsOrCreate)}
	// IOThreadsPolicies are the IO thread policies
	// (spec.domain.ioThreadsPolicy).
	IOThreadsPolicies = Words{
		string(v1.IOThreadsPolicyShared), string(v1.IOThreadsPolicyAuto),
		string(v1.IOThreadsPolicySupplementalPool),
	}
)

// Other devices.
var (
	// InputBuses are the buses of an input device (inputs[].bus).
	InputBuses = Words{string(v1.InputBusUSB), string(v1.InputBusVirtio)}
	// InputTypes are the types of an input device (inputs[].type).
	InputTypes = Words{string(v1.InputTypeTablet)}
	// VideoTypes are the video devices KubeVirt accepts on amd64
	// (devices.video.type).
	VideoTypes = Words{"vga", "cirrus", "virtio", "ramfb", "bochs"}
	// SoundModels are the sound cards KubeVirt emulates (sound.model).
	SoundModels = Words{"ich9", "ac97"}
	// PanicModels are the panic device models (panicDevices[].model).
	PanicModels = Words{string(v1.Hyperv), string(v1.Isa), string(v1.Pvpanic)}
	// WatchdogActions are the actions of an i6300esb watchdog
	// (watchdog.i6300esb.action; this library's own check: KubeVirt writes
	// any value into the domain).
	WatchdogActions = Words{string(v1.WatchdogActionReset), string(v1.WatchdogActionPoweroff), string(v1.WatchdogActionShutdown)}
)

// Interfaces.
var (
	// InterfaceModels are the NIC models (interfaces[].model); virtio
	// becomes the converter's virtio model (transitional or not).
	InterfaceModels = Words{"e1000", "e1000e", "igb", "ne2k_pci", "pcnet", "rtl8139", v1.VirtIO}
	// InterfaceStates are the link states of an interface
	// (interfaces[].state).
	InterfaceStates = Words{string(v1.InterfaceStateAbsent), string(v1.InterfaceStateLinkDown), string(v1.InterfaceStateLinkUp)}
	// PortProtocols are the protocols of a forwarded port
	// (interfaces[].ports[].protocol).
	PortProtocols = Words{"TCP", "UDP"}
)

// The rest of the VMI.
var (
	// CPUFeaturePolicies are the policies of a CPU feature
	// (cpu.features[].policy; empty is libvirt's require).
	CPUFeaturePolicies = Words{"force", "require", "optional", "disable", "forbid"}
	// RebootPolicies maps spec.domain.rebootPolicy to the domain's
	// <on_reboot> (this library's own check of the word: KubeVirt's
	// converter leaves an unknown one to libvirt's default).
	RebootPolicies = Mapping{
		{string(v1.RebootPolicyReboot), "restart"},
		{string(v1.RebootPolicyTerminate), "destroy"},
	}
	// EvictionStrategies are the eviction strategies KubeVirt knows.
	EvictionStrategies = Words{
		string(v1.EvictionStrategyNone), string(v1.EvictionStrategyLiveMigrate),
		string(v1.EvictionStrategyLiveMigrateIfPossible), string(v1.EvictionStrategyExternal),
	}
	// MachineTypes are the machine types KubeVirt accepts on amd64, as
	// filepath.Match patterns.
	MachineTypes = Words{"q35*", "pc-q35*"}
)

// UserAliasPrefix is KubeVirt's prefix of the libvirt alias of a device
// the VMI names, "ua-<name>" (convert.UserAliasPrefix): api refuses two
// devices that would share one.
const UserAliasPrefix = "ua-"
