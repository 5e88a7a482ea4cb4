package hostcaps

import "github.com/vmi2libvirt/vmi2libvirt/convert"

// Documents are what the launcher reads of a host for Facts.
type Documents struct {
	// Libvirt and QEMU are their versions, major*1e6 + minor*1e3 +
	// release (libvirt's GetLibVersion and GetVersion).
	Libvirt, QEMU uint32
	// Capabilities is the XML of libvirt's capabilities (virsh
	// capabilities).
	Capabilities []byte
	// DomainCapabilities is the XML of libvirt's domain capabilities for
	// the architecture, machine type and domain type the launcher uses
	// (virsh domcapabilities --machine q35 --virttype kvm).
	DomainCapabilities []byte
	// CPUFeatures is the XML of the host-model CPU (HostModelCPU) with
	// its features expanded by libvirt (virsh hypervisor-cpu-baseline
	// --features, KubeVirt's supported_features.xml); nil: not read (no
	// host-model CPU), CPU features are then not checked.
	CPUFeatures []byte
	// Firmware are QEMU's firmware descriptors, in the order QEMU reads
	// them (by file name).
	Firmware []Descriptor
	// Refused are the Probes libvirt refused to define: the forms this
	// host lacks.
	Refused []convert.Lack
	// Programs tells which of the Programs are installed.
	Programs map[string]bool
}

// Descriptor is one of QEMU's firmware descriptor files.
type Descriptor struct {
	// Name is the file's name ("60-edk2-x86_64.json").
	Name string
	// JSON is its content.
	JSON []byte
}

// Programs are the host programs whose presence Facts reads from
// Documents.Programs: libvirt runs swtpm for an emulated TPM and passt for
// a passt network backend, and neither shows in its capabilities.
var Programs = []string{"swtpm", "passt"}
