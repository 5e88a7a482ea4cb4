package convert

import v1 "kubevirt.io/api/core/v1"

// A Layout says where a VMI's things live on the host: the file or block
// device behind each volume, how each interface attaches, and the paths of
// sockets, logs, kernels and firmware variables. It is pure: it computes
// paths, it never touches them.
//
// Two layouts ship with the package: KubeVirtLayout, the paths virt-launcher
// uses inside its pod, and HostLayout, one state folder per VMI on a plain
// libvirt host.
type Layout interface {
	// Volume returns the host side of spec.volumes[index].
	Volume(vmi *v1.VirtualMachineInstance, index int) (DiskSource, error)
	// Filesystem returns the host side of the virtiofs filesystem
	// spec.domain.devices.filesystems[index].
	Filesystem(vmi *v1.VirtualMachineInstance, index int) (FilesystemSource, error)
	// Interface returns the host side of an interface joined to its network.
	Interface(vmi *v1.VirtualMachineInstance, iface *v1.Interface, network *v1.Network) (InterfaceAttachment, error)
	// Paths returns the VMI's sockets, logs, kernel and firmware variable paths.
	Paths(vmi *v1.VirtualMachineInstance) Paths
}

// DiskSource is the host side of a disk.
type DiskSource struct {
	Type   string // "file" or "block"
	Path   string // file or block device
	Format string // driver type: "raw" or "qcow2"

	// BackingPath and BackingFormat, when set, are written as the disk's
	// <backingStore> (KubeVirt's containerDisk overlays name theirs).
	BackingPath   string
	BackingFormat string
}

// InterfaceAttachment is the host side of a guest interface.
type InterfaceAttachment struct {
	Type   string // "ethernet" (a tap), "user", "bridge" or "network"
	Source string // bridge or libvirt network name, for "bridge" and "network"
	Target string // tap device name for "ethernet"; empty lets libvirt pick
	// Backend is the user-mode backend ("passt"); empty is libvirt's
	// default. Debian 12's libvirt 9.0 refuses any <backend> element when
	// the domain is defined: leave it empty there.
	Backend string
	// Managed tells whether libvirt creates the tap itself ("no" for a tap
	// that already exists, as in KubeVirt's pods).
	Managed string
}

// Paths of the host-side endpoints of a VMI's domain.
type Paths struct {
	SerialSocket string // unix socket of the serial console
	SerialLog    string // file the serial console is logged to
	VNCSocket    string // unix socket of the VNC server
	NVRAM        string // the VMI's EFI variable store
	// DownwardMetricsSocket is the unix socket of the downward metrics
	// virtio-serial channel (spec.domain.devices.downwardMetrics): QEMU
	// listens on it, the host side's metrics server connects to it.
	DownwardMetricsSocket string
	// Kernel and Initrd are the host paths of the files named by
	// spec.domain.firmware.kernelBoot.container (empty when not asked for).
	Kernel, Initrd string
}
