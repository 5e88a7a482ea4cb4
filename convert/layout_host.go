package convert

import (
	"fmt"
	"net/url"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
)

// The folders a HostLayout uses unless told otherwise: the defaults of the
// launcher, the commands and the golden fixtures. They are declared here
// only, beside the layout whose folders they are.
const (
	DefaultStateDir   = "/var/lib/vmi2libvirt/vmis"
	DefaultImageStore = "/var/lib/vmi2libvirt/images"
	// DefaultVirtiofsd is the virtiofsd libvirt runs for a filesystem
	// unless HostLayout.Virtiofsd says otherwise: QEMU 7.2's, in Debian
	// 12's package qemu-system-common (Debian 12 has no package virtiofsd
	// outside its backports; newer Debians' is /usr/libexec/virtiofsd).
	DefaultVirtiofsd = "/usr/lib/qemu/virtiofsd"
)

// HostLayout places each VMI on a plain libvirt host: everything the VMI
// owns lives in one state folder, StateDir/<namespace>_<name>/, and
// containerDisk images and kernel-boot files come from ImageStore.
//
// Images: an image reference (e.g. "quay.io/x/cirros:1.0") maps to the
// folder of the image's file system: Images[reference].Dir when Images has
// the reference (the launcher fills Images with what the image store
// resolved, package imagestore, for every image a VMI names), else
// ImageStore/<url.PathEscape(reference)>/ (a leading "." is escaped too, as
// "%2E"): a stable stand-in for conversions made without an image store
// (examples/convert, golden files), or a folder filled by hand. A containerDisk's disk is the file at the containerDisk's path in
// that folder, else at Images[reference].Disk, else disk.img; kernel-boot
// files are at their kernelPath and initrdPath. The disk may be raw or qcow2.
//
// Volumes, by source (<state> is StateFolder(vmi); VolumeArtifact tells the
// launcher what to create for each):
//
//	containerDisk         <state>/disks/<volume>.qcow2: a qcow2 overlay over the image's disk, made with
//	                      qemu-img create -F <its format> -b <ImageFolder(image)>/disk.img (or /<path>)
//	ephemeral             <state>/disks/<volume>.qcow2: a qcow2 overlay over the claim's disk (Claims)
//	emptyDisk             <state>/disks/<volume>.qcow2: an empty qcow2 of the volume's capacity
//	cloudInitNoCloud      <state>/cloud-init/nocloud.iso (ISO 9660, label cidata)
//	cloudInitConfigDrive  <state>/cloud-init/configdrive.iso (ISO 9660, label config-2)
//	configMap, secret,    <state>/config/<volume>.iso: an ISO of the volume's files
//	serviceAccount,
//	downwardAPI
//	persistentVolumeClaim the disk Claims names for its claimName
//	dataVolume            the disk Claims names for the data volume's name
//	                      (hotpluggable or not: a hot-plugged claim is mapped as any other)
//	hostDisk              its path as written, cleaned (a block device when under /dev/), when it
//	                      lies under a folder of HostDiskAllow; type DiskOrCreate creates a sparse
//	                      raw file of its capacity when missing
//
// A volume that a filesystem shares (spec.domain.devices.filesystems, by
// virtiofs) is a folder instead, which a virtiofsd that libvirt starts
// (Virtiofsd) shares with the guest:
//
//	configMap, secret,    <state>/config/<volume>/: a folder of the volume's files
//	serviceAccount,
//	downwardAPI
//	persistentVolumeClaim the folder Claims names, with Type "dir", for its claimName
//	dataVolume            the folder Claims names, with Type "dir", for the data volume's name
//
// Other volumes cannot be shared. The downward metrics channel
// (spec.domain.devices.downwardMetrics) is <state>/downwardmetrics.sock.
//
// sysprep, downwardMetrics and memoryDump volumes are refused. The overlays
// carry their backing file in their qcow2 header, so the domain names only
// the overlay, without a <backingStore>.
type HostLayout struct {
	// StateDir holds one folder per VMI (DefaultStateDir where a program
	// offers a default). Required.
	StateDir string
	// ImageStore is the image store's folder; the images of references
	// Images lacks are taken from one folder per escaped reference there.
	ImageStore string
	// Images maps an image reference, as the VMI writes it, to the image
	// resolved for it (see ImageFolder).
	Images map[string]HostImage
	// PodNetwork is how the pod network attaches; the zero value is
	// user-mode networking.
	PodNetwork InterfaceAttachment
	// Networks maps a multus networkName to its attachment (a bridge or a
	// libvirt network). A multus network missing here is an error.
	Networks map[string]InterfaceAttachment
	// Claims maps the claimName of a persistentVolumeClaim (also the claim
	// under an ephemeral volume) or the name of a dataVolume to the host
	// disk behind it: Type "file" (the default) or "block", an absolute Path,
	// Format "raw" (the default) or "qcow2". A claim that a filesystem
	// shares is a folder: Type "dir", an absolute Path (and a folder is
	// no disk's). A claim missing here is an error.
	Claims map[string]DiskSource
	// Virtiofsd is the virtiofsd binary libvirt starts for each
	// filesystem; DefaultVirtiofsd when empty.
	Virtiofsd string
	// HostDiskAllow lists the absolute folders under which a hostDisk
	// volume's path may lie (a path equal to a folder does not count; "/"
	// allows every path, /dev/ devices included). A hostDisk whose cleaned
	// path is under none of them is refused with a field error on
	// spec.volumes[i].hostDisk.path; empty (the default) refuses every
	// hostDisk, since a tenant's VMI could otherwise name any file of the
	// host. Relative entries match nothing. The check here is lexical (the
	// converter never looks at files); the launcher also refuses a path
	// that leads out of these folders through a symbolic link.
	HostDiskAllow []string
}

// HostImage is an image resolved on the host (by package imagestore).
type HostImage struct {
	// Dir is the absolute folder of the image's file system.
	Dir string
	// Disk is the path inside the image of a containerDisk's disk when the
	// containerDisk has no path: KubeVirt's one file under /disk/.
	Disk string
}

// HostArtifactKind says what the launcher makes for a volume in the host
// layout.
type HostArtifactKind string

// What the launcher makes for each volume source.
const (
	// ArtifactNone: nothing; the file or device exists (a claim, a hostDisk
	// of type Disk).
	ArtifactNone HostArtifactKind = ""
	// ArtifactOverlay: a qcow2 overlay at Path over BackingPath
	// (containerDisk, ephemeral).
	ArtifactOverlay HostArtifactKind = "overlay"
	// ArtifactEmptyDisk: an empty qcow2 of the emptyDisk's capacity.
	ArtifactEmptyDisk HostArtifactKind = "emptyDisk"
	// ArtifactNoCloud: a cloud-init NoCloud ISO (label cidata).
	ArtifactNoCloud HostArtifactKind = "cloudInitNoCloud"
	// ArtifactConfigDrive: a cloud-init ConfigDrive ISO (label config-2).
	ArtifactConfigDrive HostArtifactKind = "cloudInitConfigDrive"
	// ArtifactConfigISO: an ISO of a configMap, secret, serviceAccount or
	// downwardAPI volume's files, labelled with the volume's volumeLabel or,
	// as KubeVirt does without one, "cfgdata".
	ArtifactConfigISO HostArtifactKind = "configISO"
	// ArtifactHostDisk: a hostDisk of type DiskOrCreate; a sparse raw file
	// of its capacity when Path does not exist yet.
	ArtifactHostDisk HostArtifactKind = "hostDisk"
	// ArtifactConfigFolder: a folder of a configMap, secret,
	// serviceAccount or downwardAPI volume's files, which a filesystem
	// shares.
	ArtifactConfigFolder HostArtifactKind = "configFolder"
)

// HostArtifact is the host file behind one volume in the host layout, and
// what the launcher makes there before the domain starts.
type HostArtifact struct {
	Volume string // spec.volumes[Index].name
	Index  int
	Kind   HostArtifactKind
	// Path is the file or block device the domain's disk uses.
	Path string
	// Block is true when Path is a block device.
	Block bool
	// Shared is true when Path is a folder a filesystem shares, not a disk.
	Shared bool
	// Format is the disk format at Path: "raw" or "qcow2".
	Format string
	// BackingPath and BackingFormat are an overlay's backing disk. An empty
	// BackingFormat (containerDisk images) is to be probed (qemu-img info).
	BackingPath, BackingFormat string
}

// VolumeArtifact returns the host file behind spec.volumes[index] and what
// the launcher makes there. It is pure: it computes paths, it never looks at
// them. Errors are *field.Error values naming the volume's field.
func (l HostLayout) VolumeArtifact(vmi *v1.VirtualMachineInstance, index int) (HostArtifact, error) {
	v, kind, err := checkVolume(vmi, index)
	if err != nil {
		return HostArtifact{}, err
	}
	state := l.StateFolder(vmi)
	if sharedVolume(vmi, v.Name) {
		return l.sharedArtifact(v, kind, index, state)
	}
	a := HostArtifact{Volume: v.Name, Index: index, Format: "raw"}
	disk := path.Join(state, "disks", v.Name+".qcow2")
	p := volumePath(index)
	switch kind {
	case volContainerDisk:
		image := "disk.img"
		if cd := v.ContainerDisk; cd.Path != "" {
			image = path.Clean("/" + cd.Path)
		} else if img, ok := l.Images[cd.Image]; ok && img.Disk != "" {
			image = path.Clean("/" + img.Disk)
		}
		a.Kind, a.Path, a.Format = ArtifactOverlay, disk, "qcow2"
		a.BackingPath = path.Join(l.ImageFolder(v.ContainerDisk.Image), image)
	case volEphemeral:
		claim := v.Ephemeral.PersistentVolumeClaim.ClaimName
		fp := p.Child("ephemeral", "persistentVolumeClaim", "claimName")
		base, err := l.claim(claim, fp)
		if err != nil {
			return HostArtifact{}, err
		}
		if base.Type == claimFolder {
			return HostArtifact{}, field.Invalid(fp, claim, claimFolderWhy)
		}
		a.Kind, a.Path, a.Format = ArtifactOverlay, disk, "qcow2"
		a.BackingPath, a.BackingFormat = base.Path, base.Format
	case volEmptyDisk:
		a.Kind, a.Path, a.Format = ArtifactEmptyDisk, disk, "qcow2"
	case volCloudInitNoCloud:
		a.Kind, a.Path = ArtifactNoCloud, path.Join(state, "cloud-init", "nocloud.iso")
	case volCloudInitConfigDrive:
		a.Kind, a.Path = ArtifactConfigDrive, path.Join(state, "cloud-init", "configdrive.iso")
	case volConfigMap, volSecret, volServiceAccount, volDownwardAPI:
		a.Kind, a.Path = ArtifactConfigISO, path.Join(state, "config", v.Name+".iso")
	case volPVC, volDataVolume:
		name, fp := claimName(v, kind, p)
		src, err := l.claim(name, fp)
		if err != nil {
			return HostArtifact{}, err
		}
		if src.Type == claimFolder {
			return HostArtifact{}, field.Invalid(fp, name, claimFolderWhy)
		}
		a.Path, a.Format, a.Block = src.Path, src.Format, src.Type == "block"
	case volHostDisk:
		a.Path = path.Clean(v.HostDisk.Path)
		if err := l.checkHostDisk(v.HostDisk.Path, a.Path, p.Child("hostDisk", "path")); err != nil {
			return HostArtifact{}, err
		}
		a.Block = strings.HasPrefix(a.Path, "/dev/")
		if v.HostDisk.Type == v1.HostDiskExistsOrCreate {
			if a.Block {
				return HostArtifact{}, field.Invalid(p.Child("hostDisk", "type"), v.HostDisk.Type,
					"a block device cannot be created")
			}
			a.Kind = ArtifactHostDisk
		}
	default:
		return HostArtifact{}, field.Forbidden(p.Child(string(kind)),
			"the host layout places only "+strings.Join(hostVolumeKinds, ", ")+" volumes")
	}
	return a, nil
}

// checkHostDisk refuses a hostDisk path (cleaned: clean) that lies under
// no folder of HostDiskAllow, or that holds a character a libvirt domain's
// XML cannot carry.
func (l HostLayout) checkHostDisk(raw, clean string, fp *field.Path) error {
	if strings.ContainsFunc(raw, func(r rune) bool { return r < 0x20 || r == 0x7f || r == 0xfffd }) {
		return field.Invalid(fp, raw, "must not contain control characters")
	}
	if len(l.HostDiskAllow) == 0 {
		return field.Forbidden(fp, "hostDisk volumes are refused: HostLayout.HostDiskAllow names no folder")
	}
	for _, dir := range l.HostDiskAllow {
		if !path.IsAbs(dir) {
			continue
		}
		dir = path.Clean(dir)
		if dir == "/" || strings.HasPrefix(clean, dir+"/") {
			return nil
		}
	}
	return field.Invalid(fp, raw, "not under a folder of HostLayout.HostDiskAllow ("+strings.Join(l.HostDiskAllow, ", ")+")")
}

// claimName is the claim a PVC or DataVolume volume (at p) names, and the
// path of the field that names it.
func claimName(v *v1.Volume, kind volumeKind, p *field.Path) (string, *field.Path) {
	if kind == volPVC {
		return v.PersistentVolumeClaim.ClaimName, p.Child("persistentVolumeClaim", "claimName")
	}
	return v.DataVolume.Name, p.Child("dataVolume", "name")
}

// claimFolder is the Type of a claim in HostLayout.Claims that is a folder.
const claimFolder = "dir"

// claimFolderWhy is why a disk's claim that is a folder is refused.
const claimFolderWhy = "HostLayout.Claims gives a folder (type dir), which only a filesystem can share"

// sharedArtifact is VolumeArtifact for a volume that a filesystem shares:
// the folder virtiofsd shares.
func (l HostLayout) sharedArtifact(v *v1.Volume, kind volumeKind, index int, state string) (HostArtifact, error) {
	a := HostArtifact{Volume: v.Name, Index: index, Shared: true}
	p := volumePath(index)
	switch kind {
	case volConfigMap, volSecret, volServiceAccount, volDownwardAPI:
		a.Kind, a.Path = ArtifactConfigFolder, path.Join(state, "config", v.Name)
		return a, nil
	case volPVC, volDataVolume:
		name, fp := claimName(v, kind, p)
		src, err := l.claim(name, fp)
		if err != nil {
			return HostArtifact{}, err
		}
		if src.Type != claimFolder {
			return HostArtifact{}, field.Invalid(fp, name, "a filesystem shares a folder: HostLayout.Claims must give this claim type dir")
		}
		a.Path = path.Clean(src.Path)
		return a, nil
	}
	return HostArtifact{}, field.Forbidden(p.Child(string(kind)),
		"the host layout shares only "+strings.Join(sharedVolumeKinds, ", ")+" volumes with a filesystem")
}

// sharedVolumeKinds are the volume sources a filesystem can share in the
// host layout.
var sharedVolumeKinds = []string{
	string(volPVC), string(volDataVolume), string(volConfigMap), string(volSecret),
	string(volServiceAccount), string(volDownwardAPI),
}

// sharedVolume tells whether a filesystem shares the volume of this name.
func sharedVolume(vmi *v1.VirtualMachineInstance, name string) bool {
	for i := range vmi.Spec.Domain.Devices.Filesystems {
		if vmi.Spec.Domain.Devices.Filesystems[i].Name == name {
			return true
		}
	}
	return false
}

// Filesystem returns the folder that the virtiofsd libvirt starts (Virtiofsd)
// shares for spec.domain.devices.filesystems[index]: its volume's (see
// VolumeArtifact).
func (l HostLayout) Filesystem(vmi *v1.VirtualMachineInstance, index int) (FilesystemSource, error) {
	_, vi, err := filesystemVolume(vmi, index)
	if err != nil {
		return FilesystemSource{}, err
	}
	a, err := l.VolumeArtifact(vmi, vi)
	if err != nil {
		return FilesystemSource{}, err
	}
	bin := l.Virtiofsd
	if bin == "" {
		bin = DefaultVirtiofsd
	}
	return FilesystemSource{Dir: a.Path, Binary: bin}, nil
}

// hostVolumeKinds are the volume sources the host layout places.
var hostVolumeKinds = []string{
	string(volContainerDisk), string(volPVC), string(volDataVolume), string(volHostDisk),
	string(volEmptyDisk), string(volEphemeral), string(volCloudInitNoCloud),
	string(volCloudInitConfigDrive), string(volConfigMap), string(volSecret),
	string(volServiceAccount), string(volDownwardAPI),
}

// Artifacts returns VolumeArtifact for every volume of the VMI, in order.
func (l HostLayout) Artifacts(vmi *v1.VirtualMachineInstance) ([]HostArtifact, error) {
	out := make([]HostArtifact, 0, len(vmi.Spec.Volumes))
	for i := range vmi.Spec.Volumes {
		a, err := l.VolumeArtifact(vmi, i)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// claim returns the host disk Claims names for a claim or data volume, with
// its defaults filled in.
func (l HostLayout) claim(name string, fp *field.Path) (DiskSource, error) {
	src, ok := l.Claims[name]
	if !ok {
		return DiskSource{}, field.Invalid(fp, name, "HostLayout.Claims has no host disk for this claim")
	}
	if src.Type == "" {
		src.Type = "file"
	}
	if src.Format == "" {
		src.Format = "raw"
	}
	if src.Type != "file" && src.Type != "block" && src.Type != claimFolder {
		return DiskSource{}, field.Invalid(fp, name, fmt.Sprintf("HostLayout.Claims: type %q: want file, block or dir", src.Type))
	}
	if !strings.HasPrefix(src.Path, "/") {
		return DiskSource{}, field.Invalid(fp, name, fmt.Sprintf("HostLayout.Claims: path %q is not absolute", src.Path))
	}
	return src, nil
}

// Volume returns the host disk of spec.volumes[index] (see VolumeArtifact).
func (l HostLayout) Volume(vmi *v1.VirtualMachineInstance, index int) (DiskSource, error) {
	a, err := l.VolumeArtifact(vmi, index)
	if err != nil {
		return DiskSource{}, err
	}
	if a.Shared {
		return DiskSource{}, field.Invalid(volumePath(index).Child("name"), a.Volume, "a filesystem shares this volume: it is no disk's")
	}
	src := DiskSource{Type: "file", Path: a.Path, Format: a.Format}
	if a.Block {
		src.Type = "block"
	}
	return src, nil
}

// Paths returns the VMI's paths in its state folder; kernel-boot files come
// from the image store.
func (l HostLayout) Paths(vmi *v1.VirtualMachineInstance) Paths {
	dir := l.StateFolder(vmi)
	p := Paths{
		SerialSocket: path.Join(dir, "serial0.sock"),
		SerialLog:    path.Join(dir, "serial0.log"),
		VNCSocket:    path.Join(dir, "vnc.sock"),
		NVRAM:        path.Join(dir, "efi-vars.fd"),

		DownwardMetricsSocket: path.Join(dir, "downwardmetrics.sock"),
	}
	if kb := vmi.Spec.Domain.Firmware; kb != nil && kb.KernelBoot != nil && kb.KernelBoot.Container != nil {
		c := kb.KernelBoot.Container
		root := l.ImageFolder(c.Image)
		if c.KernelPath != "" {
			p.Kernel = path.Join(root, path.Clean("/"+c.KernelPath))
		}
		if c.InitrdPath != "" {
			p.Initrd = path.Join(root, path.Clean("/"+c.InitrdPath))
		}
	}
	return p
}

// StateFolder returns the VMI's state folder, StateDir/<namespace>_<name>.
func (l HostLayout) StateFolder(vmi *v1.VirtualMachineInstance) string {
	return path.Join(l.StateDir, DomainName(vmi))
}

// ImageFolder returns the folder of an image reference's file system:
// Images[reference].Dir when Images has it, else
// ImageStore/<url.PathEscape(reference)>, with a leading "." escaped as
// "%2E" so that no reference names the store itself or its parent.
func (l HostLayout) ImageFolder(reference string) string {
	if img, ok := l.Images[reference]; ok {
		return path.Clean(img.Dir)
	}
	name := url.PathEscape(reference)
	if strings.HasPrefix(name, ".") {
		name = "%2E" + name[1:]
	}
	return path.Join(l.ImageStore, name)
}
