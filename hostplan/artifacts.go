package hostplan

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// Kind says what an artifact is.
type Kind string

// The kinds of artifacts. The volume kinds are the layout's
// (convert.HostArtifactKind); the plan adds the folders they live in and
// the files it only checks.
const (
	// StateDir is HostLayout.StateDir: made, with its missing parents, when
	// it does not exist; QEMU's user must be able to reach it.
	StateDir Kind = "stateDir"
	// StateFolder is the VMI's own folder, given to QEMU's user (it
	// creates its sockets there).
	StateFolder Kind = "stateFolder"
	// Folder is a folder inside the state folder (disks/, cloud-init/,
	// config/).
	Folder Kind = "folder"
	// Overlay is a qcow2 overlay at Path over BackingPath (containerDisk,
	// ephemeral): made when it does not exist; a backing disk that is
	// missing, is a folder, cannot be reached by QEMU's user or has a
	// backing file of its own is refused first.
	Overlay = Kind(convert.ArtifactOverlay)
	// EmptyDisk is an empty qcow2 of Size bytes, made when it does not
	// exist.
	EmptyDisk = Kind(convert.ArtifactEmptyDisk)
	// NoCloud, ConfigDrive and ConfigISO are ISO 9660 images written with
	// Content: cloud-init's NoCloud and ConfigDrive, and the files of a
	// configMap, secret, serviceAccount or downwardAPI volume.
	NoCloud     = Kind(convert.ArtifactNoCloud)
	ConfigDrive = Kind(convert.ArtifactConfigDrive)
	ConfigISO   = Kind(convert.ArtifactConfigISO)
	// HostDisk is a hostDisk volume's file. Its real path (symbolic links
	// resolved) must stay under a folder of Allow; one of type
	// DiskOrCreate is made, a sparse raw file of Size bytes, when it does
	// not exist (its folder must).
	HostDisk = Kind(convert.ArtifactHostDisk)
	// ConfigFolder is a folder holding Files, the files of a configMap,
	// secret, serviceAccount or downwardAPI volume that a filesystem shares
	// (virtiofs): written whole, a new folder renamed into place, unless it
	// holds exactly those files.
	ConfigFolder = Kind(convert.ArtifactConfigFolder)
	// SharedFolder is the folder of a claim a filesystem shares
	// (HostLayout.Claims, type dir): it must exist.
	SharedFolder Kind = "sharedFolder"
	// ImageFolder is the folder of a kernel-boot image: it must exist.
	ImageFolder Kind = "imageFolder"
	// KernelFile is a kernel-boot file of an image: it must be a regular
	// file QEMU's user can reach.
	KernelFile Kind = "kernelFile"
)

// Action is what applying a plan does with one artifact.
type Action string

// The actions.
const (
	// Create makes the folder or disk unless it exists; one that exists is
	// left alone (a disk the guest may have written to).
	Create Action = "create"
	// Write makes the file hold Content, through a temporary file and a
	// rename, unless it holds exactly that already.
	Write Action = "write"
	// Check makes nothing: the file must be there as the kind says.
	Check Action = "check"
)

// The modes of what a plan makes. Files holding user data or disks are the
// owner's only; libvirt's dynamic_ownership gives each disk to QEMU's user
// while the domain runs. Sub-folders let QEMU's user walk in.
const (
	StateFolderMode fs.FileMode = 0o700 // owned by QEMU's user, which creates sockets in it
	FolderMode      fs.FileMode = 0o711
	FileMode        fs.FileMode = 0o600
	StateDirMode    fs.FileMode = 0o711 // StateDir, when it is made
	// ConfigFolderMode is a ConfigFolder's, and its sub-folders': only
	// virtiofsd (root, whom libvirt starts) reads it; its files have
	// FileMode.
	ConfigFolderMode fs.FileMode = 0o700
)

// Artifact is one host file or folder a VMI's domain needs, and what
// applying the plan does to it.
type Artifact struct {
	Kind   Kind
	Action Action
	Path   string
	// Mode is the mode the file or folder gets when it is made.
	Mode fs.FileMode
	// Owner is the user the file or folder is given to (the state folder:
	// QEMU's); nil leaves it to the one who makes it.
	Owner *User
	// Content is the exact content written (Write). It may hold user data
	// and secrets: never log it.
	Content []byte
	// Files are the exact files of a ConfigFolder (Write), by path inside
	// it, sorted; like Content, never log them.
	Files []File
	// Size is the size of a disk made empty (EmptyDisk, HostDisk).
	Size int64
	// Format is the disk format at Path; BackingPath and BackingFormat are
	// an overlay's backing disk (BackingFormat empty: to be probed).
	Format                     string
	BackingPath, BackingFormat string
	// Allow are the folders a HostDisk's real path must stay under.
	Allow []string
	// Volume and Index name the volume it backs (spec.volumes[Index]);
	// Volume is empty and Index -1 for the folders.
	Volume string
	Index  int
	// Field and Value are what an error about the artifact names: the
	// VMI's field that asks for it and the value written there.
	Field *field.Path
	Value string
}

// String describes the artifact without its content.
func (a Artifact) String() string {
	s := fmt.Sprintf("%s %s %s", a.Action, a.Kind, a.Path)
	if a.Action != Check {
		s += fmt.Sprintf(" %04o", a.Mode)
	}
	switch {
	case a.BackingPath != "":
		s += fmt.Sprintf(" over %s (%s)", a.BackingPath, orProbed(a.BackingFormat))
	case a.Size > 0:
		s += fmt.Sprintf(" %d bytes", a.Size)
	case a.Content != nil:
		s += fmt.Sprintf(" %d bytes", len(a.Content))
	case a.Kind == ConfigFolder:
		s += fmt.Sprintf(" %d files", len(a.Files))
	}
	if a.Volume != "" {
		s += " (volume " + a.Volume + ")"
	}
	return s
}

func orProbed(format string) string {
	if format == "" {
		return "format probed"
	}
	return format
}

// planner is one artifacts call of Make.
type planner struct {
	vmi     *v1.VirtualMachineInstance
	layout  convert.HostLayout
	in      Inputs
	qemu    *User
	state   string
	items   []Artifact
	folders map[string]bool // folders planned already
}

// artifacts plans every host file the VMI's domain refers to under the
// layout: its folders, cloud-init NoCloud and ConfigDrive ISOs (their
// content), config ISOs, empty disks, qcow2 overlays over containerDisk
// images and ephemeral claims, hostDisks, kernel-boot files. Its errors
// are field errors of the VMI.
func (p *planner) artifacts() error {
	if err := p.stateFolders(); err != nil {
		return err
	}
	arts, err := p.layout.Artifacts(p.vmi)
	if err != nil {
		return err
	}
	for _, a := range arts {
		if err := p.volume(a); err != nil {
			return err
		}
	}
	return p.kernelFiles()
}

// stateFolders plans StateDir and the VMI's state folder.
func (p *planner) stateFolders() error {
	state := p.layout.StateFolder(p.vmi)
	if path.Dir(state) != path.Clean(p.layout.StateDir) {
		return fmt.Errorf("hostplan: the state folder of %s/%s is not a folder inside %s", p.vmi.Namespace, p.vmi.Name, p.layout.StateDir)
	}
	p.state = state
	p.items = append(p.items,
		Artifact{Kind: StateDir, Action: Create, Path: path.Clean(p.layout.StateDir), Mode: StateDirMode, Index: -1},
		Artifact{Kind: StateFolder, Action: Create, Path: state, Mode: StateFolderMode, Owner: p.qemu, Index: -1})
	p.folders[state] = true
	return nil
}

// volume plans the host file of one volume.
func (p *planner) volume(a convert.HostArtifact) error {
	vp := volumesPath.Index(a.Index)
	vol := &p.vmi.Spec.Volumes[a.Index]
	it := Artifact{Kind: Kind(a.Kind), Path: a.Path, Mode: FileMode, Format: a.Format, Volume: a.Volume, Index: a.Index}
	switch a.Kind {
	case convert.ArtifactNone:
		if a.Shared {
			it.Kind, it.Action, it.Mode, it.Format = SharedFolder, Check, 0, ""
			it.Field, it.Value = claimField(vp, vol)
			break
		}
		if vol.HostDisk == nil {
			return nil // a claim's disk: the host's
		}
		it.Kind, it.Action = HostDisk, Check
		it.Field, it.Value, it.Allow = vp.Child("hostDisk", "path"), vol.HostDisk.Path, p.layout.HostDiskAllow
	case convert.ArtifactHostDisk:
		hd := vol.HostDisk
		it.Action, it.Size, it.Allow = Create, hd.Capacity.Value(), p.layout.HostDiskAllow
		it.Field, it.Value = vp.Child("hostDisk", "path"), hd.Path
	case convert.ArtifactOverlay:
		it.Action, it.BackingPath, it.BackingFormat = Create, a.BackingPath, a.BackingFormat
		if vol.ContainerDisk != nil {
			it.Field, it.Value = vp.Child("containerDisk", "image"), vol.ContainerDisk.Image
			if err := p.imageStore(it.Value); err != nil {
				return err
			}
			if img, ok := p.in.Images[it.Field.String()]; ok && it.BackingFormat == "" {
				it.BackingFormat = img.DiskFormat
			}
		} else {
			it.Field, it.Value = vp.Child("ephemeral", "persistentVolumeClaim", "claimName"), vol.Ephemeral.PersistentVolumeClaim.ClaimName
		}
		if !path.IsAbs(it.BackingPath) {
			return field.Invalid(it.Field, it.Value, "backing disk path "+it.BackingPath+" is not absolute")
		}
	case convert.ArtifactEmptyDisk:
		it.Action, it.Size = Create, vol.EmptyDisk.Capacity.Value()
		if it.Size <= 0 {
			return field.Invalid(vp.Child("emptyDisk", "capacity"), vol.EmptyDisk.Capacity.String(), "must be greater than zero")
		}
	case convert.ArtifactNoCloud, convert.ArtifactConfigDrive:
		content, err := cloudInitISO(p.vmi, a.Index, p.in.Sources)
		if err != nil {
			return err
		}
		it.Action, it.Content = Write, content
	case convert.ArtifactConfigISO:
		content, err := configISO(p.vmi, a.Index, p.in.Sources)
		if err != nil {
			return err
		}
		it.Action, it.Content = Write, content
	case convert.ArtifactConfigFolder:
		files, err := configFolder(p.vmi, a.Index, p.in.Sources)
		if err != nil {
			return err
		}
		it.Action, it.Files, it.Mode = Write, files, ConfigFolderMode
	default:
		return fmt.Errorf("hostplan: volume %s: artifact kind %q is not known", a.Volume, a.Kind)
	}
	return p.add(it)
}

// claimField is the field that names a volume's claim, and its value.
func claimField(vp *field.Path, vol *v1.Volume) (*field.Path, string) {
	if vol.DataVolume != nil {
		return vp.Child("dataVolume", "name"), vol.DataVolume.Name
	}
	return vp.Child("persistentVolumeClaim", "claimName"), vol.PersistentVolumeClaim.ClaimName
}

// kernelFiles plans the checks of the kernel-boot container's files.
func (p *planner) kernelFiles() error {
	c := kernelBootContainer(p.vmi)
	if c == nil {
		return nil
	}
	if err := p.imageStore(c.Image); err != nil {
		return err
	}
	p.items = append(p.items, Artifact{Kind: ImageFolder, Action: Check, Path: p.layout.ImageFolder(c.Image), Index: -1,
		Field: kernelBootContainerPath.Child("image"), Value: c.Image})
	paths := p.layout.Paths(p.vmi)
	for _, f := range []struct {
		name, value, path string
	}{{"kernelPath", c.KernelPath, paths.Kernel}, {"initrdPath", c.InitrdPath, paths.Initrd}} {
		if f.path == "" {
			continue
		}
		p.items = append(p.items, Artifact{Kind: KernelFile, Action: Check, Path: f.path, Index: -1,
			Field: kernelBootContainerPath.Child(f.name), Value: f.value})
	}
	return nil
}

// imageStore refuses a layout without an absolute ImageStore for an image
// the launcher did not resolve: its folder would be relative.
func (p *planner) imageStore(reference string) error {
	if _, ok := p.layout.Images[reference]; ok {
		return nil
	}
	if err := CheckFolder("HostLayout.ImageStore", p.layout.ImageStore); err != nil {
		return fmt.Errorf("hostplan: %w", err)
	}
	return nil
}

// add plans an artifact, the folder it lives in inside the state folder
// first.
func (p *planner) add(it Artifact) error {
	if it.Action != Check && strings.HasPrefix(it.Path, p.state+"/") {
		dir := path.Dir(it.Path)
		if !p.folders[dir] {
			if path.Dir(dir) != p.state {
				return fmt.Errorf("hostplan: artifact %s is not in a folder of the state folder %s", it.Path, p.state)
			}
			p.folders[dir] = true
			p.items = append(p.items, Artifact{Kind: Folder, Action: Create, Path: dir, Mode: FolderMode, Index: -1})
		}
	}
	p.items = append(p.items, it)
	return nil
}
