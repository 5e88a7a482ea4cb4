package convert

import (
	"fmt"
	"path"
	"slices"

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

// KubeVirt's pod folders.
const (
	kvEphemeralDisks  = "/var/run/kubevirt-ephemeral-disks"
	kvContainerDisks  = "/var/run/kubevirt/container-disks"
	kvPrivate         = "/var/run/kubevirt-private"
	kvVMIDisks        = kvPrivate + "/vmi-disks"
	kvEmptyDisks      = "/var/run/libvirt/empty-disks"
	kvPRHelperSocket  = "/var/run/kubevirt/daemons/pr/pr-helper.sock"
	kvDownwardMetrics = kvPrivate + "/downwardapi-disks/vhostmd0"
)

// kvConfigISOs is the folder of each config volume's ISO.
var kvConfigISOs = map[volumeKind]string{
	volConfigMap:   kvPrivate + "/config-map-disks",
	volSecret:      kvPrivate + "/secret-disks",
	volDownwardAPI: kvPrivate + "/downwardapi-disks",
	volSysprep:     kvPrivate + "/sysprep-disks",
}

// Volume returns the pod path of spec.volumes[index].
func (l KubeVirtLayout) Volume(vmi *v1.VirtualMachineInstance, index int) (DiskSource, error) {
	v, kind, err := checkVolume(vmi, index)
	if err != nil {
		return DiskSource{}, err
	}
	name := v.Name
	overlay := func() string { return path.Join(kvEphemeralDisks, "disk-data", name, "disk.qcow2") }
	cloudInit := func(file string) string {
		ns := vmi.Namespace
		if ns == "" {
			ns = "default"
		}
		return path.Join(kvEphemeralDisks, "cloud-init-data", ns, vmi.Name, file)
	}
	switch kind {
	case volContainerDisk:
		return DiskSource{Type: "file", Path: overlay(), Format: "qcow2",
			BackingPath: path.Join(kvContainerDisks, fmt.Sprintf("disk_%d.img", index)), BackingFormat: "qcow2"}, nil
	case volPVC, volDataVolume:
		return l.claim(name), nil
	case volEphemeral:
		base := l.claim(name)
		return DiskSource{Type: "file", Path: overlay(), Format: "qcow2",
			BackingPath: base.Path, BackingFormat: base.Format}, nil
	case volHostDisk:
		return DiskSource{Type: "file", Path: path.Join(kvVMIDisks, name, path.Base(v.HostDisk.Path)), Format: "raw"}, nil
	case volEmptyDisk:
		return DiskSource{Type: "file", Path: path.Join(kvEmptyDisks, name+".qcow2"), Format: "qcow2"}, nil
	case volCloudInitNoCloud:
		return DiskSource{Type: "file", Path: cloudInit("noCloud.iso"), Format: "raw"}, nil
	case volCloudInitConfigDrive:
		return DiskSource{Type: "file", Path: cloudInit("configdrive.iso"), Format: "raw"}, nil
	case volServiceAccount:
		return DiskSource{Type: "file", Path: kvPrivate + "/service-account-disk/service-account.iso", Format: "raw"}, nil
	case volDownwardMetrics:
		return DiskSource{Type: "file", Path: kvDownwardMetrics, Format: "raw"}, nil
	}
	if dir, ok := kvConfigISOs[kind]; ok {
		return DiskSource{Type: "file", Path: path.Join(dir, name+".iso"), Format: "raw"}, nil
	}
	return DiskSource{}, field.Forbidden(volumePath(index).Child(string(kind)), "not a disk's volume source")
}

// claim is where virt-launcher finds a claim's volume: a block device named
// after the volume, or the disk.img in the claim's mounted file system.
func (l KubeVirtLayout) claim(volume string) DiskSource {
	if slices.Contains(l.BlockVolumes, volume) {
		return DiskSource{Type: "block", Path: "/dev/" + volume, Format: "raw"}
	}
	return DiskSource{Type: "file", Path: path.Join(kvVMIDisks, volume, "disk.img"), Format: "raw"}
}

// ReservationSocket is the pr-helper socket KubeVirt runs next to its pods
// for LUNs with SCSI persistent reservation.
func (KubeVirtLayout) ReservationSocket() string { return kvPRHelperSocket }

// Paths returns the pod paths of the VMI's sockets, logs, EFI variables and
// kernel-boot files. The private folder is named after metadata.uid, which
// the API server assigns; a VMI that has none (one read from a file) uses
// its domain name instead, so that no path has an empty segment.
func (KubeVirtLayout) Paths(vmi *v1.VirtualMachineInstance) Paths {
	id := string(vmi.UID)
	if id == "" {
		id = DomainName(vmi)
	}
	private := "/var/run/kubevirt-private/" + id
	p := Paths{
		SerialSocket: private + "/virt-serial0",
		SerialLog:    private + "/virt-serial0-log",
		VNCSocket:    private + "/virt-vnc",
		NVRAM:        "/var/lib/libvirt/qemu/nvram/" + vmi.Name + "_VARS.fd",
	}
	if kb := vmi.Spec.Domain.Firmware; kb != nil && kb.KernelBoot != nil && kb.KernelBoot.Container != nil {
		const dir = "/var/run/kubevirt/container-disks/kernel-boot/"
		if c := kb.KernelBoot.Container; c.KernelPath != "" {
			p.Kernel = dir + path.Base(c.KernelPath)
		}
		if c := kb.KernelBoot.Container; c.InitrdPath != "" {
			p.Initrd = dir + path.Base(c.InitrdPath)
		}
	}
	return p
}
