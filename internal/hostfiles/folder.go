package hostfiles

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
)

// sameFolder tells whether dir holds exactly files: the same regular
// files with the same contents, and no other file, link or device (empty
// sub-folders aside). A missing dir holds nothing.
func sameFolder(dir string, files []hostplan.File) (bool, error) {
	want := make(map[string][]byte, len(files))
	for _, f := range files {
		want[f.Path] = f.Data
	}
	seen := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, ok := want[filepath.ToSlash(rel)]
		if !ok || !d.Type().IsRegular() {
			return errDiffers
		}
		got, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, data) {
			return errDiffers
		}
		seen++
		return nil
	})
	switch {
	case errors.Is(err, errDiffers), errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, err
	}
	return seen == len(want), nil
}

// errDiffers ends sameFolder's walk at the first difference.
var errDiffers = errors.New("folder differs")

// writeFolder makes dir hold exactly files: they are written into a new
// folder beside it, which then replaces dir. A dir that did not exist
// before is remembered for rollback.
func (m *maker) writeFolder(dir string, mode fs.FileMode, files []hostplan.File) (Outcome, error) {
	same, err := sameFolder(dir, files)
	if err != nil {
		return "", err
	}
	if same {
		return Kept, nil
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".tmp-"+filepath.Base(dir)+"-*")
	if err != nil {
		return "", fmt.Errorf("write folder %s: %w", dir, err)
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, mode); err != nil {
		return "", fmt.Errorf("write folder %s: %w", dir, err)
	}
	for _, f := range files {
		p := filepath.Join(tmp, filepath.FromSlash(f.Path))
		if !strings.HasPrefix(p, tmp+string(filepath.Separator)) {
			return "", fmt.Errorf("write folder %s: file %q is outside it", dir, f.Path)
		}
		if err := os.MkdirAll(filepath.Dir(p), mode); err != nil {
			return "", fmt.Errorf("write folder %s: %w", dir, err)
		}
		if err := writeAtomic(p, f.Data); err != nil {
			return "", err
		}
	}
	_, err = os.Lstat(dir)
	existed := err == nil
	if existed {
		old := tmp + ".old"
		if err := os.Rename(dir, old); err != nil {
			return "", fmt.Errorf("write folder %s: %w", dir, err)
		}
		defer os.RemoveAll(old)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", fmt.Errorf("write folder %s: %w", dir, err)
	}
	ok = true
	if !existed {
		m.made = append(m.made, dir)
	}
	return Made, nil
}
