package hostfiles

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

	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
)

// folderLocks serialises the work on one state folder within a process.
var folderLocks sync.Map // state folder → *sync.Mutex

func lockFolder(dir string) func() {
	m, _ := folderLocks.LoadOrStore(dir, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// Outcome is what Apply did with one artifact.
type Outcome string

// The outcomes.
const (
	Made    Outcome = "made"    // created or written
	Kept    Outcome = "kept"    // there already, as it must be
	Checked Outcome = "checked" // a Check artifact that is as it must be
)

// Apply makes the artifacts of p on this host, in order, under the state
// folder's lock: first it checks every one (nothing is written for a plan
// whose host lacks something, or whose files lead where they must not),
// then it makes those that are not there yet. It is idempotent: a disk or
// folder that exists is left alone, a file that holds its content already
// is not rewritten. On error, what this call made is removed again. It
// returns what it did with each artifact.
//
// Errors name the VMI's field: ErrNotReady (hostplan) for what the host
// lacks or cannot do now (a missing image or claim disk, a folder QEMU
// cannot reach, a full disk); a *field.Error alone for what the VMI asks
// that cannot be (a hostDisk whose link leads out of the allowed folders,
// a hostDisk to create without capacity).
func Apply(ctx context.Context, p *hostplan.Plan) ([]Outcome, error) {
	defer lockFolder(p.StateFolder)()
	out := make([]Outcome, len(p.Artifacts))
	for i, a := range p.Artifacts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		o, err := check(ctx, p.QEMU, a)
		if err != nil {
			return nil, err
		}
		out[i] = o
	}
	m := &maker{ctx: ctx}
	for i, a := range p.Artifacts {
		if out[i] != "" {
			continue // kept or checked
		}
		if err := ctx.Err(); err != nil {
			m.rollback()
			return nil, err
		}
		o, err := m.make(a)
		if err != nil {
			m.rollback()
			if a.Volume != "" {
				err = fmt.Errorf("%s (volume %s): %w", volumePath(a.Index), a.Volume, err)
			}
			return nil, hostplan.NotReady(err)
		}
		out[i] = o
	}
	return out, nil
}

// RemoveStateFolder removes a VMI's state folder, stateDir/<name>, and
// everything in it, under its lock. Files outside it (hostDisks, claims,
// images) are left alone. A folder that is not a child of an absolute
// stateDir other than / is refused.
func RemoveStateFolder(stateDir, folder string) error {
	if err := hostplan.CheckFolder("HostLayout.StateDir", stateDir); err != nil {
		return err
	}
	base := filepath.Base(folder)
	if filepath.Dir(folder) != filepath.Clean(stateDir) || base == "." || base == ".." || base == "/" {
		return fmt.Errorf("state folder %s is not a folder inside %s", folder, stateDir)
	}
	defer lockFolder(folder)()
	if err := os.RemoveAll(folder); err != nil {
		return fmt.Errorf("remove state folder: %w", err)
	}
	return nil
}

func volumePath(index int) *field.Path { return field.NewPath("spec", "volumes").Index(index) }

// check reads what is at an artifact's path and refuses what cannot be
// made or used; it returns Kept or Checked when the artifact needs no
// making, "" when it does.
func check(ctx context.Context, qemu *hostplan.User, a hostplan.Artifact) (Outcome, error) {
	switch a.Kind {
	case hostplan.StateDir:
		return checkStateDir(qemu, a)
	case hostplan.StateFolder, hostplan.Folder:
		switch st, err := os.Lstat(a.Path); {
		case err == nil && st.IsDir():
			return Kept, nil
		case err == nil:
			return "", hostplan.NotReady(fmt.Errorf("%s exists and is not a folder", a.Path))
		case !errors.Is(err, fs.ErrNotExist):
			return "", hostplan.NotReady(err)
		}
		return "", nil
	case hostplan.Overlay:
		return checkOverlay(ctx, qemu, a)
	case hostplan.EmptyDisk:
		exists, err := existingFile(a.Path)
		if err != nil {
			return "", hostplan.NotReady(err)
		}
		if exists {
			return Kept, nil
		}
		return "", nil
	case hostplan.NoCloud, hostplan.ConfigDrive, hostplan.ConfigISO:
		if old, err := os.ReadFile(a.Path); err == nil && bytes.Equal(old, a.Content) {
			return Kept, nil
		}
		return "", nil
	case hostplan.ConfigFolder:
		if same, err := sameFolder(a.Path, a.Files); err != nil || same {
			return Kept, err
		}
		return "", nil
	case hostplan.HostDisk:
		return checkHostDisk(a)
	case hostplan.SharedFolder:
		if st, err := os.Stat(a.Path); err != nil || !st.IsDir() {
			return "", hostplan.NotReady(field.Invalid(a.Field, a.Value, "the claim's folder "+a.Path+" (HostLayout.Claims) is not a folder of this host"))
		}
		return Checked, nil
	case hostplan.ImageFolder:
		if st, err := os.Stat(a.Path); err != nil || !st.IsDir() {
			return "", hostplan.NotReady(field.Invalid(a.Field, a.Value, "image not found in the image store (no folder "+a.Path+")"))
		}
		return Checked, nil
	case hostplan.KernelFile:
		st, err := os.Stat(a.Path)
		if err != nil || !st.Mode().IsRegular() {
			return "", hostplan.NotReady(field.Invalid(a.Field, a.Value, "not a file of the image in the image store (no "+a.Path+")"))
		}
		if err := CanReach(qemu, filepath.Dir(a.Path)); err != nil {
			return "", hostplan.NotReady(field.Invalid(a.Field, a.Value, err.Error()))
		}
		return Checked, nil
	}
	return "", fmt.Errorf("artifact %s: kind %q is not known", a.Path, a.Kind)
}

// checkStateDir checks that QEMU's user can reach StateDir, or, when it is
// to be made, the nearest folder above it that exists.
func checkStateDir(qemu *hostplan.User, a hostplan.Artifact) (Outcome, error) {
	st, err := os.Stat(a.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		parent := filepath.Dir(a.Path)
		for {
			if _, err := os.Stat(parent); err == nil || parent == "/" {
				break
			}
			parent = filepath.Dir(parent)
		}
		if err := CanReach(qemu, parent); err != nil {
			return "", hostplan.NotReady(fmt.Errorf("HostLayout.StateDir: %w", err))
		}
		return "", nil
	case err != nil:
		return "", hostplan.NotReady(fmt.Errorf("HostLayout.StateDir: %w", err))
	case !st.IsDir():
		return "", hostplan.NotReady(fmt.Errorf("HostLayout.StateDir %s is not a folder", a.Path))
	}
	if err := CanReach(qemu, a.Path); err != nil {
		return "", hostplan.NotReady(fmt.Errorf("HostLayout.StateDir: %w", err))
	}
	return Kept, nil
}

// checkOverlay checks an overlay's backing disk, unless the overlay exists
// (the guest may have written to it: it is left alone). A backing disk
// whose format is not known yet is probed.
func checkOverlay(ctx context.Context, qemu *hostplan.User, a hostplan.Artifact) (Outcome, error) {
	exists, err := existingFile(a.Path)
	if err != nil {
		return "", hostplan.NotReady(err)
	}
	if exists {
		return Kept, nil
	}
	missing := "the claim's disk " + a.BackingPath + " does not exist"
	if strings.HasSuffix(a.Field.String(), ".containerDisk.image") {
		missing = "image not found in the image store (no " + a.BackingPath + ")"
	}
	st, err := os.Stat(a.BackingPath)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", hostplan.NotReady(field.Invalid(a.Field, a.Value, missing))
	case err != nil:
		return "", hostplan.NotReady(field.Invalid(a.Field, a.Value, err.Error()))
	case st.IsDir():
		return "", hostplan.NotReady(field.Invalid(a.Field, a.Value, a.BackingPath+" is a folder, not a disk image"))
	}
	if a.BackingFormat == "" {
		if _, err := DiskFormat(ctx, a.BackingPath); err != nil {
			return "", hostplan.NotReady(field.Invalid(a.Field, a.Value, err.Error()))
		}
	}
	if err := CanReach(qemu, filepath.Dir(a.BackingPath)); err != nil {
		return "", hostplan.NotReady(field.Invalid(a.Field, a.Value, err.Error()))
	}
	return "", nil
}

// checkHostDisk checks where a hostDisk's path leads, and whether one of
// type DiskOrCreate is there or can be made. The layout checks the path as
// written; this checks where it leads once symbolic links are resolved
// (for a file still to be made, where its folder leads). Block devices
// under /dev/ are left to the lexical check: udev's links there
// (/dev/vg0/lv → ../dm-3) are the host's.
func checkHostDisk(a hostplan.Artifact) (Outcome, error) {
	clean := filepath.Clean(a.Path)
	if !strings.HasPrefix(clean, "/dev/") {
		real, err := resolvePath(clean)
		if err != nil {
			return "", hostplan.NotReady(field.Invalid(a.Field, a.Value, err.Error()))
		}
		if !underAllowed(real, a.Allow) {
			return "", field.Invalid(a.Field, a.Value, "leads to "+real+" through a symbolic link, outside the folders of HostLayout.HostDiskAllow")
		}
	}
	if a.Action == hostplan.Check {
		return Checked, nil
	}
	st, err := os.Stat(a.Path)
	switch {
	case err == nil && st.Mode().IsRegular():
		return Kept, nil
	case err == nil:
		return "", hostplan.NotReady(field.Invalid(a.Field, a.Value, "exists and is not a regular file"))
	case !errors.Is(err, fs.ErrNotExist):
		return "", hostplan.NotReady(field.Invalid(a.Field, a.Value, err.Error()))
	}
	if a.Size <= 0 {
		return "", field.Required(volumePath(a.Index).Child("hostDisk", "capacity"), "a hostDisk of type DiskOrCreate that does not exist needs a capacity")
	}
	if st, err := os.Stat(filepath.Dir(a.Path)); err != nil || !st.IsDir() {
		return "", hostplan.NotReady(field.Invalid(a.Field, a.Value, "its folder does not exist"))
	}
	return "", nil
}

// resolvePath resolves the symbolic links of p, an absolute clean path; of
// a path that does not exist yet, those of its longest existing prefix.
func resolvePath(p string) (string, error) {
	suffix := ""
	for cur := p; ; {
		real, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(real, suffix), nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		if _, lerr := os.Lstat(cur); lerr == nil {
			return "", fmt.Errorf("%s is a dangling symbolic link", cur)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p, nil
		}
		suffix = filepath.Join(filepath.Base(cur), suffix)
		cur = parent
	}
}

// underAllowed tells whether real lies under one of the absolute folders
// allow lists, each with its own symbolic links resolved ("/" allows all).
func underAllowed(real string, allow []string) bool {
	for _, dir := range allow {
		if !filepath.IsAbs(dir) {
			continue
		}
		dir = filepath.Clean(dir)
		if r, err := filepath.EvalSymlinks(dir); err == nil {
			dir = r
		}
		if dir == "/" || strings.HasPrefix(real, dir+"/") {
			return true
		}
	}
	return false
}

// existingFile reports whether path exists as a regular file; anything
// else at path is an error.
func existingFile(path string) (bool, error) {
	st, err := os.Lstat(path)
	switch {
	case err == nil && st.Mode().IsRegular():
		return true, nil
	case err == nil:
		return false, fmt.Errorf("%s exists and is not a regular file", path)
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, err
}

// maker is the making half of one Apply call: it remembers what it made,
// so that a failure can take it back.
type maker struct {
	ctx  context.Context
	made []string // paths this call made, in order
}

// make makes one artifact.
func (m *maker) make(a hostplan.Artifact) (Outcome, error) {
	switch a.Kind {
	case hostplan.StateDir:
		if _, err := os.Stat(a.Path); err == nil {
			return Kept, nil
		}
		if err := os.MkdirAll(a.Path, a.Mode); err != nil {
			return "", fmt.Errorf("create state dir: %w", err)
		}
		return Made, os.Chmod(a.Path, a.Mode)
	case hostplan.StateFolder, hostplan.Folder:
		made, err := m.mkdir(a.Path, a.Mode)
		if err != nil || !made {
			return Kept, err
		}
		if err := os.Chmod(a.Path, a.Mode); err != nil {
			return "", err
		}
		return Made, give(a.Owner, a.Path)
	case hostplan.Overlay:
		format := a.BackingFormat
		if format == "" {
			var err error
			if format, err = DiskFormat(m.ctx, a.BackingPath); err != nil {
				return "", err
			}
		}
		return m.qemuImgCreate(a.Path, []string{"-f", "qcow2", "-F", format, "-b", a.BackingPath}, "")
	case hostplan.EmptyDisk:
		return m.qemuImgCreate(a.Path, []string{"-f", a.Format}, strconv.FormatInt(a.Size, 10))
	case hostplan.HostDisk:
		return m.sparseFile(a.Path, a.Size)
	case hostplan.NoCloud, hostplan.ConfigDrive, hostplan.ConfigISO:
		return m.writeFile(a.Path, a.Content)
	case hostplan.ConfigFolder:
		return m.writeFolder(a.Path, a.Mode, a.Files)
	}
	return "", fmt.Errorf("artifact %s: kind %q is not known", a.Path, a.Kind)
}

// mkdir creates dir with mode unless it exists; a created folder is
// remembered for rollback. An existing folder keeps its mode.
func (m *maker) mkdir(dir string, mode fs.FileMode) (bool, error) {
	st, err := os.Lstat(dir)
	switch {
	case err == nil && st.IsDir():
		return false, nil
	case err == nil:
		return false, fmt.Errorf("%s exists and is not a folder", dir)
	case !errors.Is(err, fs.ErrNotExist):
		return false, err
	}
	if err := os.Mkdir(dir, mode); err != nil {
		return false, fmt.Errorf("create folder: %w", err)
	}
	m.made = append(m.made, dir)
	return true, nil
}

// rollback removes what this call made, newest first.
func (m *maker) rollback() {
	for i := len(m.made) - 1; i >= 0; i-- {
		_ = os.RemoveAll(m.made[i])
	}
	m.made = nil
}

// writeFile writes data to path through a temporary file and a rename,
// unless path already holds exactly data. A file that did not exist
// before is remembered for rollback.
func (m *maker) writeFile(path string, data []byte) (Outcome, error) {
	old, err := os.ReadFile(path)
	existed := err == nil
	if existed && bytes.Equal(old, data) {
		return Kept, nil
	}
	if err := writeAtomic(path, data); err != nil {
		return "", err
	}
	if !existed {
		m.made = append(m.made, path)
	}
	return Made, nil
}

// sparseFile creates a sparse file of size bytes unless path exists.
func (m *maker) sparseFile(path string, size int64) (Outcome, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, hostplan.FileMode)
	if errors.Is(err, fs.ErrExist) {
		return Kept, nil
	}
	if err != nil {
		return "", err
	}
	m.made = append(m.made, path)
	err = f.Truncate(size)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("create hostDisk %s: %w", path, err)
	}
	return Made, nil
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
	if err := tmp.Chmod(hostplan.FileMode); err != nil {
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
