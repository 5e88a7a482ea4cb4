package imagestore

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// staleAfter is how old an unlocked temporary folder must be before it is
// removed: a pull creates its folder a moment before it locks it.
const staleAfter = time.Minute

// tempFolder is a folder under .tmp where one pull writes, locked (flock)
// while the pull lives so that no other process removes it.
type tempFolder struct {
	path string
	lock *os.File
}

// newTemp creates and locks a temporary folder.
func (s *Store) newTemp() (*tempFolder, error) {
	p, err := os.MkdirTemp(s.path(".tmp"), "pull-")
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		os.RemoveAll(p)
		return nil, err
	}
	if err := flock(f, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		os.RemoveAll(p)
		return nil, err
	}
	return &tempFolder{path: p, lock: f}, nil
}

// remove removes the folder (if it was not published) and unlocks it.
func (t *tempFolder) remove() {
	_ = os.RemoveAll(t.path)
	_ = t.lock.Close()
}

// cleanTemps removes the temporary folders that no live pull holds: those
// of pulls cut off (a killed process), and pruned images left half removed.
func (s *Store) cleanTemps() error {
	dir := s.path(".tmp")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if info, err := e.Info(); err != nil || time.Since(info.ModTime()) < staleAfter {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		if flock(f, syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			_ = os.RemoveAll(p)
		}
		f.Close()
	}
	return nil
}

// publish moves a finished temporary folder into place as the image with
// manifest digest d. Another process having published it first is no
// error.
func (s *Store) publish(t *tempFolder, d v1.Hash) error {
	return s.withLock(false, func() error {
		dst := s.imageFolder(d)
		if err := os.Rename(t.path, dst); err != nil {
			if ok, _ := s.has(d); ok {
				return nil
			}
			return err
		}
		return syncPath(filepath.Dir(dst))
	})
}

// has reports whether the store holds the image with manifest digest d.
func (s *Store) has(d v1.Hash) (bool, error) {
	_, err := os.Stat(filepath.Join(s.imageFolder(d), recordFile))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// withLock runs fn holding the store's lock file: shared for lookups and
// publishing, exclusive for pruning, so that no image disappears between
// being found and being handed to a caller.
func (s *Store) withLock(exclusive bool, fn func() error) error {
	f, err := os.OpenFile(s.path(".lock"), os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return err
	}
	defer f.Close()
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	if err := flock(f, how); err != nil {
		return err
	}
	return fn()
}

// flock locks f, retrying when a signal interrupts the wait.
func flock(f *os.File, how int) error {
	for {
		err := syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

// syncPath flushes a file or folder to disk.
func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
