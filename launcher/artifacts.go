package launcher

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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

// prepareArtifacts creates, in the VMI's state folder, every host file its
// domain refers to under layout (see convert.HostLayout for what goes
// where): cloud-init NoCloud and ConfigDrive ISOs, config ISOs, empty
// disks, qcow2 overlays over containerDisk images and ephemeral claims, and
// hostDisks of type DiskOrCreate. It checks that containerDisk images and
// kernel-boot files are in the image store.
//
// It is idempotent: disks that exist are left alone (the guest may have
// written to them); ISOs are rewritten only when their content changed. On
// error, what this call created is removed again. User data never appears
// in its errors.
func prepareArtifacts(ctx context.Context, vmi *v1.VirtualMachineInstance, layout convert.HostLayout, sources ConfigSources) error {
	state, err := stateFolder(vmi, layout)
	if err != nil {
		return err
	}
	arts, err := layout.Artifacts(vmi)
	if err != nil {
		return err
	}
	defer lockFolder(state)()

	p := &preparer{ctx: ctx, vmi: vmi, layout: layout, sources: sources, state: state}
	if err := p.run(arts); err != nil {
		p.rollback()
		return err
	}
	return nil
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

// preparer is one prepareArtifacts call: it remembers what it created so
// that a failure can take it back.
type preparer struct {
	ctx     context.Context
	vmi     *v1.VirtualMachineInstance
	layout  convert.HostLayout
	sources ConfigSources
	state   string
	owner   *qemuOwner
	created []string // paths this call created, in order
}

func (p *preparer) run(arts []convert.HostArtifact) error {
	owner, err := resolveQEMUOwner(p.sources.QEMUUser)
	if err != nil {
		return err
	}
	p.owner = owner
	if err := p.checkKernelBoot(); err != nil {
		return err
	}
	if err := p.checkHostDisks(); err != nil {
		return err
	}
	if err := p.stateFolders(); err != nil {
		return err
	}
	for _, a := range arts {
		if err := p.ctx.Err(); err != nil {
			return err
		}
		if err := p.artifact(a); err != nil {
			return volumeError(a, err)
		}
	}
	return nil
}

// artifact makes one volume's host file.
func (p *preparer) artifact(a convert.HostArtifact) error {
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

// volumeError names the volume in an error of the host (a full disk,
// qemu-img failing...) that is not a field error already.
func volumeError(a convert.HostArtifact, err error) error {
	var fe *field.Error
	if errors.As(err, &fe) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%s (volume %s): %w", field.NewPath("spec", "volumes").Index(a.Index), a.Volume, err)
}

// stateFolders makes StateDir (0711 when missing) and the VMI's state
// folder, given to QEMU's user, and checks that QEMU's user can reach it.
func (p *preparer) stateFolders() error {
	if _, err := os.Stat(p.layout.StateDir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(p.layout.StateDir, stateDirMode); err != nil {
			return fmt.Errorf("create state dir: %w", err)
		}
	}
	if err := p.owner.canReach(p.layout.StateDir); err != nil {
		return fmt.Errorf("HostLayout.StateDir: %w", err)
	}
	if err := p.mkdir(p.state, stateFolderMode); err != nil {
		return err
	}
	if err := os.Chmod(p.state, stateFolderMode); err != nil {
		return err
	}
	return p.owner.give(p.state)
}

// mkdir creates dir with mode unless it exists; a created folder is
// remembered for rollback. An existing folder keeps its mode.
func (p *preparer) mkdir(dir string, mode fs.FileMode) error {
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
	p.created = append(p.created, dir)
	return os.Chmod(dir, mode) // past the umask
}

// subFolder creates the folder of an artifact inside the state folder.
func (p *preparer) subFolder(file string) error {
	dir := filepath.Dir(file)
	if !strings.HasPrefix(dir+"/", p.state+"/") {
		return fmt.Errorf("artifact %s is outside the state folder %s", file, p.state)
	}
	if dir == p.state {
		return nil
	}
	return p.mkdir(dir, subFolderMode)
}

// rollback removes what this call created, newest first.
func (p *preparer) rollback() {
	for i := len(p.created) - 1; i >= 0; i-- {
		_ = os.RemoveAll(p.created[i])
	}
	p.created = nil
}

// writeFile writes data to path through a temporary file and a rename,
// unless path already holds exactly data. A file that did not exist before is remembered for rollback.
func (p *preparer) writeFile(path string, data []byte) error {
	if err := p.subFolder(path); err != nil {
		return err
	}
	old, err := os.ReadFile(path)
	existed := err == nil
	if existed && string(old) == string(data) {
		return nil
	}
	if err := writeAtomic(path, data); err != nil {
		return err
	}
	if !existed {
		p.created = append(p.created, path)
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
