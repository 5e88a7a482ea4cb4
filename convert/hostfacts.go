package convert

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// HostFacts are what the host's libvirt and QEMU can give a domain, as
// package hostcaps reads them from libvirt's capabilities and domain
// capabilities and from QEMU's firmware descriptors. The zero value is
// KubeVirt's own libvirt (the one virt-launcher ships, libvirt 10 or later
// with QEMU 9): nothing is checked and every form KubeVirt writes is
// written, as KubeVirtOptions assumes. Each list left nil is not checked;
// Lacks names what this host refuses of KubeVirt's forms.
type HostFacts struct {
	// Libvirt and QEMU are their versions, major*1e6 + minor*1e3 +
	// release (0: unknown).
	Libvirt, QEMU uint32
	// Arch is the host's architecture ("x86_64"), DomainType the domain
	// type the domain capabilities were read for ("kvm" or "qemu") and
	// Machine the machine type they were read for, as QEMU names it
	// ("pc-q35-7.2").
	Arch, DomainType, Machine string
	// MachineTypes are the machine types QEMU offers for Arch and
	// DomainType, each alias ("q35") and canonical name ("pc-q35-7.2").
	// A VMI's spec.domain.machine.type must be one of them.
	MachineTypes []string
	// CPUModels are the named CPU models usable with DomainType. A VMI's
	// spec.domain.cpu.model, other than host-model and host-passthrough,
	// must be one of them.
	CPUModels []string
	// HostModel is the CPU that host-model gives a guest (nil when libvirt
	// offers no host-model, or not checked).
	HostModel *HostModelCPU
	// CPUFeatures are the CPU features this host can give a guest: those
	// the host-model CPU has once libvirt expands it (virsh
	// hypervisor-cpu-baseline --features, KubeVirt's
	// supported_features.xml), in libvirt's order. A feature a VMI
	// requires (spec.domain.cpu.features, policy require or force) must
	// be one of them; nil: not checked.
	CPUFeatures []string
	// KnownCPUModels are all the named CPU models QEMU knows for
	// DomainType, usable on this host or not (KubeVirt's labels of the
	// models a host-model guest may migrate as).
	KnownCPUModels []string
	// TSC is the host CPU's time-stamp counter (nil when libvirt reports
	// none: no invariant TSC, or not KVM).
	TSC *TSCCounter
	// Hyperv are the Hyper-V enlightenments QEMU can give a guest of
	// DomainType, in libvirt's names ("vpindex", "stimer"...), in its
	// order.
	Hyperv []string
	// LaunchSecurity are the confidential-computing forms the host offers:
	// "sev", "sev-es", "sev-snp", "tdx", "s390-pv".
	LaunchSecurity []string
	// Firmware are the firmware builds QEMU's descriptors list (for the
	// launcher's choice of Options.EFI and for labels; the converter reads
	// Options.EFI).
	Firmware []Firmware
	// NUMA is the host's NUMA topology, cells in the order libvirt lists
	// them.
	NUMA []NUMACell
	// Lacks names the forms of KubeVirt's domain this host's libvirt or
	// QEMU does not have (see the Lack constants).
	Lacks []Lack
}

// HostModelCPU is the CPU libvirt's host-model mode gives a guest: a named
// model, and the features added to it (Features) or taken away
// (Disabled).
type HostModelCPU struct {
	Model, Vendor string
	// Features are the features host-model requires beyond Model's;
	// Disabled are those of Model that this host lacks.
	Features, Disabled []string
}

// TSCCounter is the host CPU's time-stamp counter as libvirt's
// capabilities report it (<counter name="tsc">).
type TSCCounter struct {
	// Frequency is in Hz.
	Frequency uint64
	// Scalable tells whether KVM can give a guest another frequency (TSC
	// scaling).
	Scalable bool
}

// Firmware is one firmware build of QEMU's firmware descriptors
// (/usr/share/qemu/firmware/*.json).
type Firmware struct {
	// Description is the descriptor's.
	Description string
	// Interfaces are "uefi", "bios"...
	Interfaces []string
	// Code and Vars are the executable and the NVRAM template (Vars is
	// empty for a firmware without one).
	Code, Vars string
	// Machines are the machine-type patterns of its targets for Arch
	// ("pc-q35-*").
	Machines []string
	// SecureBoot, EnrolledKeys, RequiresSMM and AMDSEV are its features
	// secure-boot, enrolled-keys, requires-smm and amd-sev.
	SecureBoot, EnrolledKeys, RequiresSMM, AMDSEV bool
}

// NUMACell is one NUMA cell of the host.
type NUMACell struct {
	ID uint
	// MemoryKiB is the cell's memory.
	MemoryKiB uint64
	// CPUs are the cell's host CPUs, with the siblings of each.
	CPUs []NUMACPU
	// Distances maps the other cells' ids to their distance.
	Distances map[uint]uint
}

// NUMACPU is a host CPU of a NUMA cell.
type NUMACPU struct {
	ID, Socket, Core uint
	// Siblings are the CPUs that share its core, itself among them.
	Siblings []uint
}

// Lack names a form of KubeVirt's domain that a host's libvirt or QEMU does
// not have.
type Lack string

// The forms a host may lack. For each, lackDetails says what the converter
// does there.
const (
	// LackHostModel: libvirt offers no host-model CPU (e.g. without KVM on
	// an old libvirt).
	LackHostModel Lack = "host-model"
	// LackHostPassthrough: no host-passthrough CPU (QEMU without KVM).
	LackHostPassthrough Lack = "host-passthrough"
	// LackSlotlessMaxMemory: libvirt refuses <maxMemory slots="0">,
	// KubeVirt's memory hotplug through virtio-mem (libvirt 9.0): the
	// converter leaves <maxMemory> out and the guest runs without memory
	// hotplug.
	LackSlotlessMaxMemory Lack = "maxmemory-without-slots"
	// LackDiscardGranularity: no <blockio discard_granularity> (libvirt
	// before 10.3).
	LackDiscardGranularity Lack = "discard-granularity"
	// LackTLBFlushDirectExtended: no Hyper-V <tlbflush> <direct> and
	// <extended> (libvirt before 9.1).
	LackTLBFlushDirectExtended Lack = "hyperv-tlbflush-direct-extended"
	// LackDiskIOThreads: no disk <driver><iothreads> mapping of a disk's
	// queues to IO threads (libvirt before 10.0).
	LackDiskIOThreads Lack = "disk-iothreads"
	// LackPvpanic: no pvpanic panic model, QEMU's PCI pvpanic device
	// (libvirt before 9.1).
	LackPvpanic Lack = "panic-pvpanic"
	// LackTPMEmulator: libvirt cannot emulate a TPM (no swtpm).
	LackTPMEmulator Lack = "tpm-emulator"
	// LackPasst: no passt backend for user-mode interfaces (no passt
	// binary, or a libvirt before 9.0).
	LackPasst Lack = "passt"
)

// lackDetails say, for each Lack, what this host lacks, in the words of a
// refusal: "this host's libvirt has no ...".
var lackDetails = map[Lack]string{
	LackHostModel:              "this host's libvirt offers no host-model CPU",
	LackHostPassthrough:        "this host's QEMU offers no host-passthrough CPU (it needs KVM)",
	LackSlotlessMaxMemory:      "this host's libvirt refuses <maxMemory> without memory slots",
	LackDiscardGranularity:     "this host's libvirt has no <blockio discard_granularity> (libvirt 10.3 added it)",
	LackTLBFlushDirectExtended: "this host's libvirt has no direct or extended Hyper-V TLB flush (libvirt 9.1 added them)",
	LackDiskIOThreads:          "supplementalPool maps disk queues to IO threads (<driver><iothreads>), which this host's libvirt does not have (libvirt 10.0 added it)",
	LackPvpanic:                "this host's libvirt has no pvpanic panic model (the PCI pvpanic device; libvirt 9.1 added it)",
	LackTPMEmulator:            "this host's libvirt cannot emulate a TPM (swtpm is not installed)",
	LackPasst:                  "this host has no passt backend for user-mode networking (the passt package is not installed)",
}

// Has tells whether the host has form l (it is not in Lacks).
func (h *HostFacts) Has(l Lack) bool { return !slices.Contains(h.Lacks, l) }

// refuseLack is the refusal of a field whose form the host lacks.
func refuseLack(path *field.Path, l Lack) *field.Error {
	return field.Forbidden(path, lackDetails[l])
}

// unsupported is a refusal of value at path because the host offers only
// offered (what: "this host's QEMU offers").
func unsupported(path *field.Path, value string, what string, offered []string) *field.Error {
	return &field.Error{Type: field.ErrorTypeNotSupported, Field: path.String(), BadValue: value,
		Detail: fmt.Sprintf("%s %s", what, quotedList(offered))}
}

// quotedList lists values, quoted and comma-separated ("none" when empty).
func quotedList(values []string) string {
	if len(values) == 0 {
		return "none"
	}
	var b strings.Builder
	for i, v := range values {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q", v)
	}
	return b.String()
}

// checkCPUModel refuses a CPU model (spec.domain.cpu.model, "" for
// host-model) that the host does not offer.
func (h *HostFacts) checkCPUModel(model string) *field.Error {
	path := cpuPath.Child("model")
	switch model {
	case "", "host-model":
		if !h.Has(LackHostModel) {
			return unsupported(path, "host-model", lackDetails[LackHostModel]+"; its QEMU offers", h.CPUModels)
		}
	case "host-passthrough":
		if !h.Has(LackHostPassthrough) {
			return refuseLack(path, LackHostPassthrough)
		}
	default:
		if h.CPUModels != nil && !slices.Contains(h.CPUModels, model) {
			return unsupported(path, model, "this host's QEMU offers", h.CPUModels)
		}
	}
	return nil
}

// checkCPUFeature refuses a CPU feature that a guest of CPU mode mode must
// have (policy require or force) and the host's CPU lacks: host-model
// lists it as disabled (for a host-model guest), or it is not among
// CPUFeatures (for a host-model or named model; host-passthrough may give
// features that host-model leaves out).
func (h *HostFacts) checkCPUFeature(i int, name, policy, mode string) *field.Error {
	if policy != "require" && policy != "force" {
		return nil
	}
	path := cpuPath.Child("features").Index(i).Child("name")
	if mode == "host-model" && h.HostModel != nil && slices.Contains(h.HostModel.Disabled, name) {
		return field.Invalid(path, name, fmt.Sprintf("this host's CPU lacks it (its host-model CPU, %s, disables it)", h.HostModel.Model))
	}
	if mode != "host-passthrough" && h.CPUFeatures != nil && !slices.Contains(h.CPUFeatures, name) {
		return field.Invalid(path, name, fmt.Sprintf("this host's CPU lacks it (it is not among the %d features libvirt expands its host-model CPU to)", len(h.CPUFeatures)))
	}
	return nil
}

// checkMachine refuses a machine type (spec.domain.machine.type) that the
// host's QEMU does not offer.
func (h *HostFacts) checkMachine(machine string) *field.Error {
	if machine == "" || h.MachineTypes == nil || slices.Contains(h.MachineTypes, machine) {
		return nil
	}
	return unsupported(domainPath.Child("machine", "type"), machine, "this host's QEMU offers", h.MachineTypes)
}
