package launcher

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// ConfigSources names the local folders that back configMap, secret,
// serviceAccount and cloud-init secretRef volumes: each key is the
// configMap, secret or service account name, each value a folder whose
// regular files become the volume's files (names starting with ".." are
// skipped, as in the folders kubelet writes; symbolic links are followed
// only when they stay inside the folder).
//
// Secrets also back cloud-init's secretRef and networkDataSecretRef (keys
// "userdata"/"userData" and "networkdata"/"networkData") and the SSH keys
// of spec.accessCredentials propagated by noCloud or configDrive.
type ConfigSources struct {
	ConfigMaps map[string]string
	Secrets    map[string]string
	// ServiceAccounts maps a service account name to its token folder.
	ServiceAccounts map[string]string

	// QEMUUser is the "user[:group]" QEMU runs as; the VMI's state folder
	// is given to it so that QEMU can create its sockets there. Empty: the
	// user and group set in /etc/libvirt/qemu.conf, else "libvirt-qemu"
	// (Debian) or "qemu" when such a user exists. "-" leaves ownership
	// alone (qemu:///session, where QEMU runs as the caller). Ignored when
	// the launcher does not run as root.
	QEMUUser string
}

// Modes of what prepareArtifacts creates. Files holding user data or disks
// are the owner's only; libvirt's dynamic_ownership gives each disk to
// QEMU's user while the domain runs. Sub-folders let QEMU's user walk in.
const (
	stateFolderMode = 0o700 // owned by QEMU's user, which creates sockets in it
	subFolderMode   = 0o711
	artifactMode    = 0o600
	stateDirMode    = 0o711 // StateDir, when prepareArtifacts creates it
)

// folderLocks serialises artifact work on one state folder.
var folderLocks sync.Map // state folder → *sync.Mutex

func lockFolder(dir string) func() {
	m, _ := folderLocks.LoadOrStore(dir, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// ArtifactAction is what Sync does with one artifact.
type ArtifactAction string

// Artifact actions.
const (
	// ActionKeep: the artifact is there as it must be (a disk the guest may
	// have written to, an ISO with the same content): left alone.
	ActionKeep ArtifactAction = "keep"
	// ActionCreate: a folder or disk is made.
	ActionCreate ArtifactAction = "create"
	// ActionWrite: a file is written with the artifact's Content, through
	// a temporary file and a rename.
	ActionWrite ArtifactAction = "write"
)

// Kinds of the folders a VMI's artifacts live in, beside the volume kinds
// of convert.HostArtifactKind.
const (
	// ArtifactStateDir is HostLayout.StateDir, made (0711) when missing.
	ArtifactStateDir convert.HostArtifactKind = "stateDir"
	// ArtifactStateFolder is the VMI's own folder, given to QEMU's user
	// (it creates its sockets there).
	ArtifactStateFolder convert.HostArtifactKind = "stateFolder"
	// ArtifactFolder is a folder inside the state folder (disks/,
	// cloud-init/, config/).
	ArtifactFolder convert.HostArtifactKind = "folder"
)

// Artifact is one host file or folder a VMI's domain needs, and what Sync
// does to it, as planned before anything is written.
type Artifact struct {
	Kind convert.HostArtifactKind
	Path string
	// Volume and Index name the volume it backs (spec.volumes[Index]);
	// Volume is empty for folders.
	Volume string
	Index  int
	Action ArtifactAction
	// Mode is the mode the file or folder gets.
	Mode fs.FileMode
	// Content is the exact content written (ActionWrite: cloud-init and
	// config ISOs). It may hold user data and secrets: never log it.
	Content []byte
	// Size is the size of a disk created empty (emptyDisk, hostDisk).
	Size int64
	// Format is the disk format at Path; BackingPath and BackingFormat
	// are an overlay's backing disk.
	Format                     string
	BackingPath, BackingFormat string
}

// String describes the artifact without its content.
func (a Artifact) String() string {
	s := fmt.Sprintf("%s %s %s %04o", a.Action, a.Kind, a.Path, a.Mode)
	switch {
	case a.BackingPath != "":
		s += fmt.Sprintf(" over %s (%s)", a.BackingPath, a.BackingFormat)
	case a.Size > 0:
		s += fmt.Sprintf(" %d bytes", a.Size)
	case a.Content != nil:
		s += fmt.Sprintf(" %d bytes", len(a.Content))
	}
	if a.Volume != "" {
		s += " (volume " + a.Volume + ")"
	}
	return s
}

// artifactPlan is what applyArtifacts makes for one VMI: its state folder,
// QEMU's user, and the artifacts in the order they are made.
type artifactPlan struct {
	state string
	owner *qemuOwner
	items []Artifact
}

// prepareArtifacts plans and makes, in the VMI's state folder, every host
// file its domain refers to under layout (see convert.HostLayout for what
// goes where).
func prepareArtifacts(ctx context.Context, vmi *v1.VirtualMachineInstance, layout convert.HostLayout, sources ConfigSources) error {
	plan, err := planArtifacts(ctx, vmi, layout, sources)
	if err != nil {
		return err
	}
	return applyArtifacts(ctx, plan)
}

// planArtifacts plans every host file the VMI's domain refers to under
// layout: cloud-init NoCloud and ConfigDrive ISOs (their content), config
// ISOs, empty disks, qcow2 overlays over containerDisk images and
// ephemeral claims, hostDisks of type DiskOrCreate, and the folders they
// live in. It only reads: it checks that images, kernel-boot files,
// claims and config sources are there, resolves hostDisks' links, probes
// backing formats, and compares ISOs with what is written already.
//
// Its errors name the VMI's field: a *HostError (ErrHostNotReady) for what
// the host lacks, a *field.Error for what the VMI asks that cannot be
// made. User data never appears in them.
func planArtifacts(ctx context.Context, vmi *v1.VirtualMachineInstance, layout convert.HostLayout, sources ConfigSources) (*artifactPlan, error) {
	state, err := stateFolder(vmi, layout)
	if err != nil {
		return nil, err
	}
	arts, err := layout.Artifacts(vmi)
	if err != nil {
		return nil, err
	}
	owner, err := resolveQEMUOwner(sources.QEMUUser)
	if err != nil {
		return nil, notReady(err)
	}
	p := &planner{ctx: ctx, vmi: vmi, layout: layout, sources: sources, state: state, owner: owner, folders: map[string]bool{}}
	if err := p.checkKernelBoot(); err != nil {
		return nil, err
	}
	if err := p.checkHostDisks(); err != nil {
		return nil, err
	}
	if err := p.stateFolders(); err != nil {
		return nil, err
	}
	for _, a := range arts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := p.artifact(a); err != nil {
			return nil, volumeError(a, err)
		}
	}
	return &artifactPlan{state: state, owner: owner, items: p.items}, nil
}

// removeArtifacts removes the VMI's state folder and everything in it.
// Files outside it (hostDisks, claims, images) are left alone.
func removeArtifacts(vmi *v1.VirtualMachineInstance, layout convert.HostLayout) error {
	state, err := stateFolder(vmi, layout)
	if err != nil {
		return err
	}
	defer lockFolder(state)()
	if err := os.RemoveAll(state); err != nil {
		return fmt.Errorf("remove state folder: %w", err)
	}
	return nil
}

// stateFolder returns the VMI's state folder, refusing one that is not a
// child of an absolute StateDir.
func stateFolder(vmi *v1.VirtualMachineInstance, layout convert.HostLayout) (string, error) {
	if err := checkAbsolute("HostLayout.StateDir", layout.StateDir); err != nil {
		return "", err
	}
	state := layout.StateFolder(vmi)
	base := filepath.Base(state)
	if filepath.Dir(state) != filepath.Clean(layout.StateDir) || base == "." || base == ".." || base == "/" {
		return "", fmt.Errorf("state folder of %s/%s is not a folder inside %s", vmi.Namespace, vmi.Name, layout.StateDir)
	}
	return state, nil
}

func checkAbsolute(what, dir string) error {
	if dir == "" || !filepath.IsAbs(dir) || filepath.Clean(dir) == "/" {
		return fmt.Errorf("%s %q must be an absolute folder other than /", what, dir)
	}
	return nil
}

// planner is one planArtifacts call.
type planner struct {
	ctx     context.Context
	vmi     *v1.VirtualMachineInstance
	layout  convert.HostLayout
	sources ConfigSources
	state   string
	owner   *qemuOwner
	items   []Artifact
	folders map[string]bool // folders planned already
}

// artifact plans one volume's host file.
func (p *planner) artifact(a convert.HostArtifact) error {
	switch a.Kind {
	case convert.ArtifactNone:
		return nil
	case convert.ArtifactOverlay:
		return p.overlay(a)
	case convert.ArtifactEmptyDisk:
		return p.emptyDisk(a)
	case convert.ArtifactHostDisk:
		return p.hostDisk(a)
	case convert.ArtifactNoCloud, convert.ArtifactConfigDrive:
		return p.cloudInit(a)
	case convert.ArtifactConfigISO:
		return p.configISO(a)
	}
	return fmt.Errorf("volume %s: artifact kind %q is not known to the launcher", a.Volume, a.Kind)
}

// add plans an artifact of volume a (its sub-folder first).
func (p *planner) add(a convert.HostArtifact, it Artifact) error {
	it.Volume, it.Index = a.Volume, a.Index
	if it.Kind == "" {
		it.Kind = a.Kind
	}
	if it.Path == "" {
		it.Path = a.Path
	}
	if it.Format == "" {
		it.Format = a.Format
	}
	if it.Mode == 0 {
		it.Mode = artifactMode
	}
	if it.Action != ActionKeep && strings.HasPrefix(it.Path, p.state+"/") {
		if err := p.subFolder(it.Path); err != nil {
			return err
		}
	}
	p.items = append(p.items, it)
	return nil
}

// volumeError names the volume in an error of the host (a full disk,
// qemu-img failing...) that is not a field error already.
func volumeError(a convert.HostArtifact, err error) error {
	var fe *field.Error
	if errors.As(err, &fe) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%s (volume %s): %w", field.NewPath("spec", "volumes").Index(a.Index), a.Volume, err)
}

// stateFolders plans StateDir (0711 when missing) and the VMI's state
// folder, given to QEMU's user, and checks that QEMU's user can reach
// them.
func (p *planner) stateFolders() error {
	dir := p.layout.StateDir
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// Made with its missing parents, 0711: QEMU's user must reach
		// the nearest folder that exists.
		p.items = append(p.items, Artifact{Kind: ArtifactStateDir, Path: dir, Action: ActionCreate, Mode: stateDirMode, Index: -1})
		parent := filepath.Dir(dir)
		for {
			if _, err := os.Stat(parent); err == nil || parent == "/" {
				break
			}
			parent = filepath.Dir(parent)
		}
		if err := p.owner.canReach(parent); err != nil {
			return notReady(fmt.Errorf("HostLayout.StateDir: %w", err))
		}
	case err != nil:
		return notReady(fmt.Errorf("HostLayout.StateDir: %w", err))
	case !st.IsDir():
		return notReady(fmt.Errorf("HostLayout.StateDir %s is not a folder", dir))
	default:
		if err := p.owner.canReach(dir); err != nil {
			return notReady(fmt.Errorf("HostLayout.StateDir: %w", err))
		}
	}
	action := ActionCreate
	if st, err := os.Lstat(p.state); err == nil {
		if !st.IsDir() {
			return notReady(fmt.Errorf("%s exists and is not a folder", p.state))
		}
		action = ActionKeep
	}
	p.items = append(p.items, Artifact{Kind: ArtifactStateFolder, Path: p.state, Action: action, Mode: stateFolderMode, Index: -1})
	p.folders[p.state] = true
	return nil
}

// subFolder plans the folder of an artifact inside the state folder.
func (p *planner) subFolder(file string) error {
	dir := filepath.Dir(file)
	if !strings.HasPrefix(dir+"/", p.state+"/") {
		return fmt.Errorf("artifact %s is outside the state folder %s", file, p.state)
	}
	if p.folders[dir] {
		return nil
	}
	p.folders[dir] = true
	action := ActionCreate
	if st, err := os.Lstat(dir); err == nil {
		if !st.IsDir() {
			return notReady(fmt.Errorf("%s exists and is not a folder", dir))
		}
		action = ActionKeep
	}
	p.items = append(p.items, Artifact{Kind: ArtifactFolder, Path: dir, Action: action, Mode: subFolderMode, Index: -1})
	return nil
}

// writePlan plans writing data to path, or keeping it when path holds
// exactly data already.
func (p *planner) writePlan(a convert.HostArtifact, data []byte) error {
	action := ActionWrite
	if old, err := os.ReadFile(a.Path); err == nil && bytes.Equal(old, data) {
		action = ActionKeep
	}
	return p.add(a, Artifact{Action: action, Content: data})
}

// applyArtifacts makes what plan says, in its order, under the state
// folder's lock. It is idempotent: a disk that exists by now is left
// alone. On error, what this call created is removed again.
func applyArtifacts(ctx context.Context, plan *artifactPlan) error {
	defer lockFolder(plan.state)()
	a := &applier{ctx: ctx, owner: plan.owner}
	for _, it := range plan.items {
		if err := ctx.Err(); err != nil {
			a.rollback()
			return err
		}
		if err := a.apply(it); err != nil {
			a.rollback()
			if it.Volume != "" {
				return fmt.Errorf("%s (volume %s): %w", field.NewPath("spec", "volumes").Index(it.Index), it.Volume, err)
			}
			return err
		}
	}
	return nil
}

// applier is one applyArtifacts call: it remembers what it created so
// that a failure can take it back.
type applier struct {
	ctx     context.Context
	owner   *qemuOwner
	created []string // paths this call created, in order
}

// apply makes one artifact.
func (a *applier) apply(it Artifact) error {
	if it.Action == ActionKeep {
		return nil
	}
	switch it.Kind {
	case ArtifactStateDir:
		if _, err := os.Stat(it.Path); err == nil {
			return nil
		}
		if err := os.MkdirAll(it.Path, it.Mode); err != nil {
			return fmt.Errorf("create state dir: %w", err)
		}
		return os.Chmod(it.Path, it.Mode)
	case ArtifactStateFolder:
		if err := a.mkdir(it.Path, it.Mode); err != nil {
			return err
		}
		if err := os.Chmod(it.Path, it.Mode); err != nil {
			return err
		}
		return a.owner.give(it.Path)
	case ArtifactFolder:
		return a.mkdir(it.Path, it.Mode)
	case convert.ArtifactOverlay:
		return a.qemuImgCreate(it.Path, []string{"-f", "qcow2", "-F", it.BackingFormat, "-b", it.BackingPath}, "")
	case convert.ArtifactEmptyDisk:
		return a.qemuImgCreate(it.Path, []string{"-f", it.Format}, strconv.FormatInt(it.Size, 10))
	case convert.ArtifactHostDisk:
		return a.sparseFile(it.Path, it.Size)
	case convert.ArtifactNoCloud, convert.ArtifactConfigDrive, convert.ArtifactConfigISO:
		return a.writeFile(it.Path, it.Content)
	}
	return fmt.Errorf("artifact %s: kind %q is not known to the launcher", it.Path, it.Kind)
}

// mkdir creates dir with mode unless it exists; a created folder is
// remembered for rollback. An existing folder keeps its mode.
func (a *applier) mkdir(dir string, mode fs.FileMode) error {
	st, err := os.Lstat(dir)
	switch {
	case err == nil && st.IsDir():
		return nil
	case err == nil:
		return fmt.Errorf("%s exists and is not a folder", dir)
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	if err := os.Mkdir(dir, mode); err != nil {
		return fmt.Errorf("create folder: %w", err)
	}
	a.created = append(a.created, dir)
	return os.Chmod(dir, mode) // past the umask
}

// rollback removes what this call created, newest first.
func (a *applier) rollback() {
	for i := len(a.created) - 1; i >= 0; i-- {
		_ = os.RemoveAll(a.created[i])
	}
	a.created = nil
}

// writeFile writes data to path through a temporary file and a rename,
// unless path already holds exactly data. A file that did not exist
// before is remembered for rollback.
func (a *applier) writeFile(path string, data []byte) error {
	old, err := os.ReadFile(path)
	existed := err == nil
	if existed && bytes.Equal(old, data) {
		return nil
	}
	if err := writeAtomic(path, data); err != nil {
		return err
	}
	if !existed {
		a.created = append(a.created, path)
	}
	return nil
}

// sparseFile creates a sparse file of size bytes unless path exists.
func (a *applier) sparseFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, artifactMode)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	a.created = append(a.created, path)
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("create hostDisk %s: %w", path, err)
	}
	return nil
}

// writeAtomic writes data to a temporary file beside path, mode 0600,
// and renames it over path.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	ok := false
	defer func() {
		if !ok {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(artifactMode); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	ok = true
	return nil
}
