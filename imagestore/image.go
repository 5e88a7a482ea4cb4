package imagestore

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Image is an image the store holds.
type Image struct {
	// Reference is the reference it was resolved or imported under, as the
	// caller wrote it.
	Reference string
	// Digest is its manifest's digest ("sha256:<hex>"), for linux/amd64.
	Digest string
	// Dir is the absolute folder of its file system (layers flattened):
	// <Root>/sha256/<hex>/rootfs.
	Dir string
	// Size is the bytes of its files.
	Size int64
}

// diskFolder is where KubeVirt looks for a containerDisk's disk when its
// path is unset.
const diskFolder = "/disk"

// DiskPath returns the path inside the image of a containerDisk's disk
// file, as KubeVirt finds it: diskPath (the containerDisk's path) when set,
// else the one entry under /disk/ (qcow2 or raw; none or several is
// ErrNoDisk). The file must be a regular file of the image (links are
// followed within it). Join the result to Dir with HostPath.
func (img *Image) DiskPath(diskPath string) (string, error) {
	root, err := os.OpenRoot(img.Dir)
	if err != nil {
		return "", failure(img.Reference, ErrStorage, "", err)
	}
	defer root.Close()
	if diskPath == "" {
		entries, err := fs.ReadDir(root.FS(), strings.TrimPrefix(diskFolder, "/"))
		if err != nil {
			return "", failure(img.Reference, ErrNoDisk, "no folder "+diskFolder+"/", nil)
		}
		if len(entries) != 1 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			return "", failure(img.Reference, ErrNoDisk, fmt.Sprintf("%d entries under %s/ (%s), want exactly one disk file", len(entries), diskFolder, strings.Join(names, ", ")), nil)
		}
		diskPath = path.Join(diskFolder, entries[0].Name())
	}
	p := inImage(diskPath)
	if st, err := root.Stat(p[1:]); err != nil || !st.Mode().IsRegular() {
		return "", failure(img.Reference, ErrNoDisk, p+" is not a regular file of the image", nil)
	}
	return p, nil
}

// HostPath returns the host path of the regular file at p inside the image
// (a kernelPath or initrdPath, or what DiskPath returned). Links are
// followed within the image; one leading out of it, or no regular file at
// p, is ErrNoFile.
func (img *Image) HostPath(p string) (string, error) {
	root, err := os.OpenRoot(img.Dir)
	if err != nil {
		return "", failure(img.Reference, ErrStorage, "", err)
	}
	defer root.Close()
	clean := inImage(p)
	if clean == "/" {
		return "", failure(img.Reference, ErrNoFile, fmt.Sprintf("%q names no file", p), nil)
	}
	if st, err := root.Stat(clean[1:]); err != nil || !st.Mode().IsRegular() {
		return "", failure(img.Reference, ErrNoFile, clean+" is not a regular file of the image", nil)
	}
	return filepath.Join(img.Dir, filepath.FromSlash(clean)), nil
}

// inImage cleans a path inside an image, rooted at "/" (so ".." cannot
// climb above it).
func inImage(p string) string {
	return path.Clean("/" + p)
}

// recordFile is what the store knows of an image, beside its rootfs.
const recordFile = "image.json"

// record is the content of recordFile.
type record struct {
	Digest string `json:"digest"`
	Config string `json:"config"`
	Size   int64  `json:"size"`
	// Source is registry, oci-layout or docker-archive.
	Source string `json:"source"`
}

// write writes the record into an image folder being made.
func (r record) write(folder string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return writeSynced(filepath.Join(folder, recordFile), append(data, '\n'))
}

// image returns the stored image with manifest digest d as reference raw.
func (s *Store) image(raw string, d v1.Hash) (*Image, error) {
	data, err := os.ReadFile(filepath.Join(s.imageFolder(d), recordFile))
	if err != nil {
		return nil, err
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", recordFile, err)
	}
	return &Image{Reference: raw, Digest: d.String(), Dir: filepath.Join(s.imageFolder(d), "rootfs"), Size: r.Size}, nil
}

// refRecord says which image manifest digest a reference resolved to.
type refRecord struct {
	Reference string `json:"reference"`
	Digest    string `json:"digest"`
}

// refFile returns the file of a reference's record (by the hash of its
// full name, which may be longer than a file name may be).
func (s *Store) refFile(refName string) string {
	sum := sha256.Sum256([]byte(refName))
	return s.path(".refs", hex.EncodeToString(sum[:])+".json")
}

// lookup returns the stored image a reference names, or nil: a digest
// that is a stored image's manifest digest, or a reference recorded by an
// earlier pull or import.
func (s *Store) lookup(raw string, ref name.Reference) (*Image, error) {
	var out *Image
	err := s.withLock(false, func() error {
		if dig, ok := ref.(name.Digest); ok {
			if d, err := v1.NewHash(dig.DigestStr()); err == nil {
				if ok, err := s.has(d); err != nil || ok {
					if err == nil {
						out, err = s.image(raw, d)
					}
					return err
				}
			}
		}
		data, err := os.ReadFile(s.refFile(ref.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		var r refRecord
		if err := json.Unmarshal(data, &r); err != nil || r.Reference != ref.Name() {
			return nil // a damaged record: pull again
		}
		d, err := v1.NewHash(r.Digest)
		if err != nil {
			return nil
		}
		if ok, err := s.has(d); err != nil || !ok {
			return err
		}
		out, err = s.image(raw, d)
		return err
	})
	if err != nil {
		return nil, failure(raw, ErrStorage, "", err)
	}
	return out, nil
}

// useRef records that refName names the stored image d and returns it;
// errPruned if d went away since it was extracted.
func (s *Store) useRef(raw, refName string, d v1.Hash) (*Image, error) {
	var out *Image
	err := s.withLock(false, func() error {
		if ok, err := s.has(d); err != nil || !ok {
			if err == nil {
				err = errPruned
			}
			return err
		}
		data, err := json.Marshal(refRecord{Reference: refName, Digest: d.String()})
		if err != nil {
			return err
		}
		if err := writeSynced(s.refFile(refName), append(data, '\n')); err != nil {
			return err
		}
		out, err = s.image(raw, d)
		return err
	})
	if errors.Is(err, errPruned) {
		return nil, err
	}
	if err != nil {
		return nil, failure(raw, ErrStorage, "", err)
	}
	return out, nil
}

// writeSynced writes a file through a temporary file beside it, synced and
// renamed into place, so that it is whole or absent.
func writeSynced(p string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-"+filepath.Base(p)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(fileMode)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(f.Name(), p)
}
