package convert

import (
	"path"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
)

// KubeVirtLayout is the layout virt-launcher uses inside its pod: the paths
// below /var/run/kubevirt*, tap devices for pod and multus interfaces.
// Domains converted with it can be compared with KubeVirt's own.
//
// Volumes sit where virt-launcher finds them:
//
//	containerDisk         /var/run/kubevirt-ephemeral-disks/disk-data/<volume>/disk.qcow2,
//	                      a qcow2 overlay over /var/run/kubevirt/container-disks/disk_<volume index>.img (qcow2)
//	persistentVolumeClaim /var/run/kubevirt-private/vmi-disks/<volume>/disk.img (raw), or /dev/<volume> when block
//	                      hotpluggable: /var/run/kubevirt/hotplug-disks/<volume>.img, or .../hotplug-disks/<volume> when block
//	dataVolume            as persistentVolumeClaim
//	ephemeral             /var/run/kubevirt-ephemeral-disks/disk-data/<volume>/disk.qcow2 over the claim's image
//	hostDisk              /var/run/kubevirt-private/vmi-disks/<volume>/<base name of its path> (raw)
//	emptyDisk             /var/run/libvirt/empty-disks/<volume>.qcow2
//	cloudInitNoCloud      /var/run/kubevirt-ephemeral-disks/cloud-init-data/<namespace>/<name>/noCloud.iso
//	cloudInitConfigDrive  /var/run/kubevirt-ephemeral-disks/cloud-init-data/<namespace>/<name>/configdrive.iso
//	configMap             /var/run/kubevirt-private/config-map-disks/<volume>.iso
//	secret                /var/run/kubevirt-private/secret-disks/<volume>.iso
//	downwardAPI           /var/run/kubevirt-private/downwardapi-disks/<volume>.iso
//	serviceAccount        /var/run/kubevirt-private/service-account-disk/service-account.iso
//	sysprep               /var/run/kubevirt-private/sysprep-disks/<volume>.iso
//	downwardMetrics       /var/run/kubevirt-private/downwardapi-disks/vhostmd0
type KubeVirtLayout struct {
	// BlockVolumes names the persistentVolumeClaim, dataVolume and ephemeral
	// volumes whose claim has volumeMode Block; the others are file systems
	// holding a disk.img.
	BlockVolumes []string
}

// joinPath is path.Join(dir, names...) for a clean absolute dir: it joins
// with a slash when every name is one that path.Join would keep as it is
// (not empty, "." or "..", without a slash), and leaves the other cases
// to path.Join.
func joinPath(dir string, names ...string) string {
	n := len(dir)
	for _, s := range names {
		if s == "" || s == "." || s == ".." || strings.Contains(s, "/") {
			return path.Join(append([]string{dir}, names...)...)
		}
		n += 1 + len(s)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(dir)
	for _, s := range names {
		b.WriteByte('/')
		b.WriteString(s)
	}
	return b.String()
}

// KubeVirt's pod folders.
const (
	kvEphemeralDisks  = "/var/run/kubevirt-ephemeral-disks"
	kvContainerDisks  = "/var/run/kubevirt/container-disks"
	kvPrivate         = "/var/run/kubevirt-private"
	kvVMIDisks        = kvPrivate + "/vmi-disks"
	kvEmptyDisks      = "/var/run/libvirt/empty-disks"
	kvHotplugDisks    = "/var/run/kubevirt/hotplug-disks"
	kvPRHelperSocket  = "/var/run/kubevirt/daemons/pr/pr-helper.sock"
	kvDownwardMetrics = kvPrivate + "/downwardapi-disks/vhostmd0"
	// kvDownwardMetricsSocket is the downward metrics channel's socket,
	// which virt-handler connects to.
	kvDownwardMetricsSocket = kvPrivate + "/downwardmetrics-channel/downwardmetrics.sock"
)

// Volume returns the pod path of spec.volumes[index].
func (l KubeVirtLayout) Volume(vmi *v1.VirtualMachineInstance, index int) (DiskSource, error) {
	v, kind, err := checkVolume(vmi, index)
	if err != nil {
		return DiskSource{}, err
	}
	name := v.Name
	switch kind {
	case volContainerDisk:
		return DiskSource{Type: "file", Path: kvOverlay(name), Format: "qcow2",
			BackingPath: kvContainerDisks + "/disk_" + strconv.Itoa(index) + ".img", BackingFormat: "qcow2"}, nil
	case volPVC, volDataVolume:
		if Hotpluggable(v) {
			return l.hotplugClaim(name), nil
		}
		return l.claim(name), nil
	case volEphemeral:
		base := l.claim(name)
		return DiskSource{Type: "file", Path: kvOverlay(name), Format: "qcow2",
			BackingPath: base.Path, BackingFormat: base.Format}, nil
	case volHostDisk:
		return DiskSource{Type: "file", Path: joinPath(kvVMIDisks, name, path.Base(v.HostDisk.Path)), Format: "raw"}, nil
	case volEmptyDisk:
		return DiskSource{Type: "file", Path: kvEmptyDisks + "/" + name + ".qcow2", Format: "qcow2"}, nil
	case volCloudInitNoCloud:
		return DiskSource{Type: "file", Path: kvCloudInit(vmi, "noCloud.iso"), Format: "raw"}, nil
	case volCloudInitConfigDrive:
		return DiskSource{Type: "file", Path: kvCloudInit(vmi, "configdrive.iso"), Format: "raw"}, nil
	case volServiceAccount:
		return DiskSource{Type: "file", Path: kvPrivate + "/service-account-disk/service-account.iso", Format: "raw"}, nil
	case volDownwardMetrics:
		return DiskSource{Type: "file", Path: kvDownwardMetrics, Format: "raw"}, nil
	}
	if dir := kvConfigISOs(kind); dir != "" {
		return DiskSource{Type: "file", Path: dir + "/" + name + ".iso", Format: "raw"}, nil
	}
	return DiskSource{}, field.Forbidden(volumePath(index).Child(string(kind)), "not a disk's volume source")
}

// kvOverlay is the qcow2 overlay virt-launcher makes over a containerDisk
// or ephemeral volume.
func kvOverlay(volume string) string {
	return kvEphemeralDisks + "/disk-data/" + volume + "/disk.qcow2"
}

// kvCloudInit is where virt-launcher writes a cloud-init ISO.
func kvCloudInit(vmi *v1.VirtualMachineInstance, file string) string {
	return joinPath(kvEphemeralDisks, "cloud-init-data", vmiNamespace(vmi), vmi.Name, file)
}

// kvConfigISOs is the folder of each config volume's ISO ("" for other
// kinds).
func kvConfigISOs(kind volumeKind) string {
	switch kind {
	case volConfigMap:
		return kvPrivate + "/config-map-disks"
	case volSecret:
		return kvPrivate + "/secret-disks"
	case volDownwardAPI:
		return kvPrivate + "/downwardapi-disks"
	case volSysprep:
		return kvPrivate + "/sysprep-disks"
	}
	return ""
}

// claim is where virt-launcher finds a claim's volume: a block device named
// after the volume, or the disk.img in the claim's mounted file system.
func (l KubeVirtLayout) claim(volume string) DiskSource {
	if slices.Contains(l.BlockVolumes, volume) {
		return DiskSource{Type: "block", Path: "/dev/" + volume, Format: "raw"}
	}
	return DiskSource{Type: "file", Path: kvVMIDisks + "/" + volume + "/disk.img", Format: "raw"}
}

// hotplugClaim is where virt-handler mounts a hot-plugged claim in the
// pod: a file <volume>.img or a block device <volume> in KubeVirt's
// hotplug-disks folder.
func (l KubeVirtLayout) hotplugClaim(volume string) DiskSource {
	if slices.Contains(l.BlockVolumes, volume) {
		return DiskSource{Type: "block", Path: kvHotplugDisks + "/" + volume, Format: "raw"}
	}
	return DiskSource{Type: "file", Path: kvHotplugDisks + "/" + volume + ".img", Format: "raw"}
}

// ReservationSocket is the pr-helper socket KubeVirt runs next to its pods
// for LUNs with SCSI persistent reservation.
func (KubeVirtLayout) ReservationSocket() string { return kvPRHelperSocket }

// Paths returns the pod paths of the VMI's sockets, logs, EFI variables and
// kernel-boot files. The private folder is named after metadata.uid, which
// the API server assigns; a VMI that has none (one read from a file) uses
// its domain name instead, so that no path has an empty segment.
func (KubeVirtLayout) Paths(vmi *v1.VirtualMachineInstance) Paths {
	const (
		serialLog  = "/virt-serial0-log" // the serial socket's name is its start
		vncSocket  = "/virt-vnc"
		nvramDir   = "/var/lib/libvirt/qemu/nvram/"
		nvramFile  = "_VARS.fd"
		kernelDir  = "/var/run/kubevirt/container-disks/kernel-boot/"
		socketName = len("/virt-serial0")
	)
	// The folder is named after the uid, or else after the domain name,
	// "<namespace>_<name>". Room for serialLog after it: the log's path
	// is the folder's followed by it.
	folder := make([]string, 0, 6)
	if vmi.UID != "" {
		folder = append(folder, kvPrivate, "/", string(vmi.UID))
	} else {
		folder = append(folder, kvPrivate, "/", vmiNamespace(vmi), "_", vmi.Name)
	}
	var kernel, initrd string
	if kb := vmi.Spec.Domain.Firmware; kb != nil && kb.KernelBoot != nil && kb.KernelBoot.Container != nil {
		if c := kb.KernelBoot.Container; c.KernelPath != "" {
			kernel = path.Base(c.KernelPath)
		}
		if c := kb.KernelBoot.Container; c.InitrdPath != "" {
			initrd = path.Base(c.InitrdPath)
		}
	}
	// Every path is a slice of one string (text): one allocation.
	var t text
	dirLen := 0
	for _, s := range folder {
		dirLen += len(s)
	}
	t.b.Grow(2*dirLen + len(serialLog) + len(vncSocket) + len(nvramDir) + len(vmi.Name) + len(nvramFile) +
		len(kernelDir) + len(kernel) + len(kernelDir) + len(initrd))
	log := t.join(append(folder, serialLog)...)
	dir := log[:dirLen]
	p := Paths{
		SerialSocket: log[:dirLen+socketName],
		SerialLog:    log,
		VNCSocket:    t.join(dir, vncSocket),
		NVRAM:        t.join(nvramDir, vmi.Name, nvramFile),
		// The same for every VMI: the pod has one.
		DownwardMetricsSocket: kvDownwardMetricsSocket,
	}
	if kernel != "" {
		p.Kernel = t.join(kernelDir, kernel)
	}
	if initrd != "" {
		p.Initrd = t.join(kernelDir, initrd)
	}
	return p
}

// kvVirtiofsSockets is the folder of the sockets of the virtiofsd
// containers of KubeVirt's pod, one per filesystem.
const kvVirtiofsSockets = "/var/run/kubevirt/virtiofs-containers"

// Filesystem returns the socket of the virtiofsd KubeVirt runs for
// spec.domain.devices.filesystems[index], in a container of the VMI's pod
// (<filesystem name>.sock), whatever volume it shares.
func (KubeVirtLayout) Filesystem(vmi *v1.VirtualMachineInstance, index int) (FilesystemSource, error) {
	v, _, err := filesystemVolume(vmi, index)
	if err != nil {
		return FilesystemSource{}, err
	}
	return FilesystemSource{Socket: kvVirtiofsSockets + "/" + v.Name + ".sock"}, nil
}
