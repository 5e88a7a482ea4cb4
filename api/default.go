package api

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	v1 "kubevirt.io/api/core/v1"
)

// KubeVirt's default cluster configuration, as far as it shapes a VMI.
const (
	// DefaultMachineType is KubeVirt's machine type for amd64.
	DefaultMachineType = "q35"
	// DefaultArchitecture is the architecture Default assumes and fills in.
	DefaultArchitecture = "amd64"
	// DefaultNamespace is the namespace of a VMI that names none.
	DefaultNamespace = "default"
	// DefaultMaxHotplugRatio is KubeVirt's ratio of hotplug maxima (CPU
	// sockets, guest memory) to the values a VMI boots with.
	DefaultMaxHotplugRatio = 4
	// maxHotplugVCPUs caps sockets*cores*threads of the CPU hotplug maximum.
	maxHotplugVCPUs = 512
)

// ClusterConfig holds the cluster-level choices of a KubeVirt installation
// that shape the defaults of a VMI. The zero value is KubeVirt's default
// configuration: bridge binding for the default pod interface, CPU model
// host-model, machine type q35, LiveUpdate rollout strategy (CPU and memory
// hotplug on) with a hotplug ratio of 4, no cluster-wide hotplug maxima.
type ClusterConfig struct {
	// DefaultNetworkInterface is the binding of the pod interface added to a
	// VMI that has no interfaces and no networks: "bridge" (empty, and any
	// value KubeVirt does not know, mean bridge, as in KubeVirt) or
	// "masquerade".
	DefaultNetworkInterface string
	// CPUModel is the CPU model of VMIs that name none; empty means
	// host-model.
	CPUModel string
	// MachineType is the machine type of VMIs that name none; empty means
	// q35.
	MachineType string
	// RolloutStrategy is the VM rollout strategy: LiveUpdate (empty) turns
	// CPU-socket and memory hotplug maxima on; Stage leaves them off.
	RolloutStrategy v1.VMRolloutStrategy
	// MaxHotplugRatio multiplies sockets and guest memory into their
	// hotplug maxima; 0 means 4.
	MaxHotplugRatio uint32
	// MaxCPUSockets is the cluster's liveUpdateConfiguration.maxCpuSockets;
	// 0 means unset (the ratio applies).
	MaxCPUSockets uint32
	// MaxGuest is the cluster's liveUpdateConfiguration.maxGuest; nil means
	// unset (the ratio applies).
	MaxGuest *resource.Quantity
	// EvictionStrategy is the cluster's evictionStrategy: that of VMIs
	// which set none; empty means None (KubeVirt's default).
	EvictionStrategy v1.EvictionStrategy
}

func (c ClusterConfig) machineType() string {
	if c.MachineType != "" {
		return c.MachineType
	}
	return DefaultMachineType
}

func (c ClusterConfig) cpuModel() string {
	if c.CPUModel != "" {
		return c.CPUModel
	}
	return v1.DefaultCPUModel
}

func (c ClusterConfig) liveUpdate() bool {
	return c.RolloutStrategy == "" || c.RolloutStrategy == v1.VMRolloutStrategyLiveUpdate
}

func (c ClusterConfig) hotplugRatio() uint32 {
	if c.MaxHotplugRatio != 0 {
		return c.MaxHotplugRatio
	}
	return DefaultMaxHotplugRatio
}

// defaultStep is one of KubeVirt's admission defaults.
type defaultStep func(vmi *v1.VirtualMachineInstance, cfg ClusterConfig)

// defaultSteps are KubeVirt's admission defaults for amd64 in the order
// KubeVirt's mutating webhook applies them (pkg/defaults
// SetDefaultVirtualMachineInstance, then the VMI mutator), with the
// random firmware UUID replaced by a derived one.
var defaultSteps = []defaultStep{
	defaultIdentity,           // namespace, firmware.uuid (derived, not random)
	defaultArchitecture,       // spec.architecture: amd64
	defaultMachineType,        // spec.domain.machine.type: q35
	defaultCPURequest,         // requests.cpu from limits.cpu
	defaultGuestMemory,        // memory.guest from requests/limits/hugepages
	defaultCPUTopology,        // sockets from the CPU limit or request
	defaultPullPolicies,       // containerDisk imagePullPolicy
	defaultEvictionStrategy,   // evictionStrategy: the cluster's (None)
	defaultPodInterface,       // default pod interface and network
	defaultVolumeDisks,        // a disk for every volume without one
	defaultObjects,            // kubevirt.io/api's own defaults (features, disks, cd-rom, inputs, timers, probes)
	defaultHypervDependencies, // Hyper-V features the enabled ones need
	defaultDiskBus,            // SATA for disks, CD-ROMs and LUNs without a bus
	defaultWatchdog,           // i6300esb, action reset
	defaultCPUModel,           // host-model
	defaultMemoryStatus,       // status.memory
	defaultCPUTopologyStatus,  // status.currentCPUTopology
	defaultCPUHotplug,         // maxSockets under LiveUpdate
	defaultMemoryHotplug,      // maxGuest under LiveUpdate
	defaultPCITopologyVersion, // kubevirt.io/pci-topology-version: v3
}

// Default applies KubeVirt's admission defaults for amd64 to vmi, in place,
// as KubeVirt's mutating webhook does on creation with cfg as the cluster
// configuration: machine type, architecture, guest memory and CPU topology
// from resources, CPU model, a disk for every volume without one, SATA as
// disk bus, the default pod interface and network, features (ACPI on),
// CD-ROM, input, watchdog, timer and Hyper-V defaults, and CPU-socket and
// memory hotplug maxima under the LiveUpdate rollout strategy.
//
// Unlike KubeVirt, Default is deterministic: a VMI without firmware.uuid
// gets one derived from its namespace and name (FirmwareUUID), and a VMI
// without namespace is put in "default". Default never fails; what KubeVirt
// would refuse is left for Validate. It is idempotent.
func Default(vmi *v1.VirtualMachineInstance, cfg ClusterConfig) {
	if vmi == nil {
		return
	}
	for _, step := range defaultSteps {
		step(vmi, cfg)
	}
}

// defaultObjects applies the defaults kubevirt.io/api declares on its types
// (features {} so ACPI is on, a disk target for disks of no kind, CD-ROM
// readOnly and tray, input bus and type, timers, Hyper-V feature states,
// probes). firmware.uuid is set before, so it takes no random UUID.
func defaultObjects(vmi *v1.VirtualMachineInstance, _ ClusterConfig) {
	v1.SetObjectDefaults_VirtualMachineInstance(vmi)
}

func defaultArchitecture(vmi *v1.VirtualMachineInstance, _ ClusterConfig) {
	if vmi.Spec.Architecture == "" {
		vmi.Spec.Architecture = DefaultArchitecture
	}
}

func defaultMachineType(vmi *v1.VirtualMachineInstance, cfg ClusterConfig) {
	d := &vmi.Spec.Domain
	if d.Machine == nil {
		d.Machine = &v1.Machine{}
	}
	if d.Machine.Type == "" {
		d.Machine.Type = cfg.machineType()
	}
}

func defaultEvictionStrategy(vmi *v1.VirtualMachineInstance, cfg ClusterConfig) {
	if vmi.Spec.EvictionStrategy == nil {
		s := cfg.evictionStrategy()
		vmi.Spec.EvictionStrategy = &s
	}
}

func (c ClusterConfig) evictionStrategy() v1.EvictionStrategy {
	if c.EvictionStrategy != "" {
		return c.EvictionStrategy
	}
	return v1.EvictionStrategyNone
}

// EvictionStrategyOf is vmi's evictionStrategy: its own, or the
// cluster's for a VMI that sets none (one not defaulted by admission).
func (c ClusterConfig) EvictionStrategyOf(vmi *v1.VirtualMachineInstance) v1.EvictionStrategy {
	if s := vmi.Spec.EvictionStrategy; s != nil {
		return *s
	}
	return c.evictionStrategy()
}

// defaultPCITopologyVersion marks VMIs on a PCIe machine (q35) with the PCI
// topology version KubeVirt's mutator stamps on new VMIs.
func defaultPCITopologyVersion(vmi *v1.VirtualMachineInstance, _ ClusterConfig) {
	switch vmi.Spec.Architecture {
	case "amd64", "arm64", "":
	default:
		return
	}
	if m := vmi.Spec.Domain.Machine; m != nil && !strings.Contains(m.Type, "q35") && !strings.HasPrefix(m.Type, "virt") {
		return
	}
	if _, ok := vmi.Annotations[v1.PciTopologyVersionAnnotation]; ok {
		return
	}
	if vmi.Annotations == nil {
		vmi.Annotations = map[string]string{}
	}
	vmi.Annotations[v1.PciTopologyVersionAnnotation] = v1.PciTopologyVersionV3
}
