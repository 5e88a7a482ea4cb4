package vmigen

import (
	"fmt"
	"math/rand/v2"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// Profile is the vocabulary the generator draws from.
type Profile int

const (
	// Supported draws only what the project converts today, with the
	// Options of the Case: every VMI of this profile converts.
	Supported Profile = iota
	// KubeVirt draws, beside the Supported vocabulary, what KubeVirt
	// admits (with the feature gates HostDisk, DownwardMetrics and
	// EnableVirtioFsStorageVolumes on, as kvdiff runs it) and converts but
	// the project refuses today: NUMA guest mapping passthrough (with
	// realtime on some, which converts but needs the passthrough, and
	// is refused for it: no profile gives the host's NUMA cells),
	// discardGranularity, Hyper-V tlbflush direct and extended,
	// the supplementalPool IO-thread policy, the pvpanic panic model, a LUN
	// on a volume that is a file or on the SATA bus (where Default puts a
	// LUN without a bus), kernel arguments with an initrd but no kernel,
	// and in the host layout the DHCP options, downwardMetrics and sysprep
	// volumes it has no place for. Each such field is named in
	// Case.Refusable (discardGranularity, tlbflush's, supplementalPool and
	// pvpanic in the host layout only, whose Debian 12 libvirt
	// lacks them: the KubeVirt layout converts them, Case.NewerForms). (A
	// serial on a CD-ROM or LUN and an endOfInterrupt on a disabled APIC,
	// which KubeVirt's converter ignores, are drawn in both profiles.) Fields
	// behind gates kvdiff leaves off (VSOCK, persistent reservations) and
	// devices KubeVirt's converter needs a device plugin's host addresses
	// for (GPUs, host devices, SR-IOV) are left out of this profile.
	KubeVirt
)

// String names the profile as the command's -profile flag does.
func (p Profile) String() string {
	switch p {
	case Supported:
		return "supported"
	case KubeVirt:
		return "kubevirt"
	}
	return fmt.Sprintf("Profile(%d)", int(p))
}

// Layout is where the generated VMIs are meant to run, and so which
// convert.Options a Case carries.
type Layout int

const (
	// KubeVirtLayout: Case.Options is convert.KubeVirtOptions(), KubeVirt's
	// pod paths (claims are file systems there, as in kvdiff).
	KubeVirtLayout Layout = iota
	// HostLayout: Case.Options places the VMI on a plain Debian 12 libvirt
	// host (convert.HostLayout, domain type qemu, Debian's OVMF, no memory
	// hotplug, as libvirt 9.0 needs), with every claim, multus network,
	// hostDisk folder and host device the VMI names mapped.
	HostLayout
)

// String names the layout as the command's -layout flag does.
func (l Layout) String() string {
	switch l {
	case KubeVirtLayout:
		return "kubevirt"
	case HostLayout:
		return "host"
	}
	return fmt.Sprintf("Layout(%d)", int(l))
}

// Config says what to generate. The zero value generates Supported VMIs
// for the KubeVirt layout from seed 0.
type Config struct {
	// Seed selects the sequence: the same Seed and index give the same
	// VMI, byte for byte once marshalled, on any machine.
	Seed uint64
	// Profile is the vocabulary (Supported by default).
	Profile Profile
	// Layout is where the VMIs are meant to run (KubeVirtLayout by
	// default).
	Layout Layout
	// NamePrefix starts every VMI's name ("vmigen" when empty); the name
	// is NamePrefix-s<Seed>-<index>.
	NamePrefix string
	// Namespace is every VMI's namespace; empty leaves it unset in some
	// VMIs and "default" in the others (api.Default fills in "default").
	Namespace string
	// StateDir is the host layout's state folder (convert.DefaultStateDir
	// when empty).
	StateDir string
	// Skip leaves the areas it names out of the VMIs (zero: every area is
	// drawn).
	Skip Areas
}

// Areas is a set of parts of a VMI the generator draws.
type Areas uint32

// The areas a Config can leave out (Config.Skip).
const (
	// AreaStorage: disks and volumes.
	AreaStorage Areas = 1 << iota
	// AreaNetwork: interfaces and networks (left out, the VMI gets
	// KubeVirt's default pod interface).
	AreaNetwork
	// AreaCPU: the CPU's topology, model, features and placement.
	AreaCPU
	// AreaFirmware: bootloader, kernel boot, firmware uuid and serial.
	AreaFirmware
	// AreaFeatures: ACPI, APIC, SMM, Hyper-V, KVM, pvspinlock.
	AreaFeatures
	// AreaClock: clock offset and timers.
	AreaClock
	// AreaDevices: inputs, watchdog, RNG, TPM, sound, video, panic
	// devices, the autoattach switches, host devices.
	AreaDevices
	// AreaMetadata: labels, annotations, scheduling fields, lifecycle.
	AreaMetadata
)

// Case is one generated VMI and the Options to convert it with.
type Case struct {
	// Index is the VMI's index in its Config's sequence.
	Index int
	// VMI is the VirtualMachineInstance as a user writes it: not
	// defaulted (api.Default, or the pipeline, defaults it).
	VMI *v1.VirtualMachineInstance
	// Options converts the VMI in the Config's layout: claims, multus
	// networks, hostDisk folders and host devices it names are mapped.
	Options convert.Options
	// Refusable lists the paths of the fields the KubeVirt profile drew
	// beyond the Supported vocabulary, in the order drawn: the project
	// refuses a VMI that has one today, and names one of these paths (or
	// a path inside one) when it does. Empty for every Supported VMI.
	Refusable []string
	// NewerForms are the forms of KubeVirt's libvirt that the VMI's domain
	// has where Options' host facts have them (the KubeVirt layout: no
	// facts, KubeVirt's libvirt) and Debian 12's libvirt 9.0, and so its
	// schema, lacks: a schema check of this host skips such a domain.
	NewerForms []convert.Lack
}

// Generate returns the VMI of index i of the sequence cfg describes. It is
// pure: the same cfg and i give the same Case.
func Generate(cfg Config, i int) Case {
	g := newGen(cfg, i)
	g.draw()
	return Case{Index: i, VMI: g.vmi, Options: g.options(), Refusable: g.refusable, NewerForms: g.newer}
}

// Cases returns the first n Cases of cfg's sequence.
func Cases(cfg Config, n int) []Case {
	out := make([]Case, n)
	for i := range out {
		out[i] = Generate(cfg, i)
	}
	return out
}

// Name is the name of the VMI of index i of cfg's sequence.
func Name(cfg Config, i int) string {
	prefix := cfg.NamePrefix
	if prefix == "" {
		prefix = "vmigen"
	}
	return fmt.Sprintf("%s-s%d-%05d", prefix, cfg.Seed, i)
}

// newRand is the random source of one VMI: a PCG stream of its own per
// seed and index, so that a VMI does not change when another does.
func newRand(seed uint64, i int) *rand.Rand {
	return rand.New(rand.NewPCG(seed, uint64(i)))
}
