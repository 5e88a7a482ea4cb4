package imagestore

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"syscall"
)

// Whiteout markers of OCI and Docker layers: ".wh.NAME" deletes NAME of
// the layers below; ".wh..wh..opq" in a folder hides everything the layers
// below put in that folder.
const (
	whiteoutPrefix = ".wh."
	whiteoutMeta   = ".wh..wh."
	opaqueWhiteout = ".wh..wh..opq"
)

// maxEntries bounds how many tar entries one image may have, so that an
// image of millions of empty files cannot exhaust the host's inodes.
const maxEntries = 1 << 20

// File modes of what the store writes: QEMU (another user) reads images.
const (
	fileMode   = 0o644
	folderMode = 0o755
)

// sparseBlock is the unit in which runs of zeros are skipped instead of
// written, so that raw disks stay sparse.
const sparseBlock = 64 << 10

var zeroBlock [sparseBlock]byte

// entryError is an entry of a layer that cannot be extracted safely.
type entryError struct {
	name, why string
}

func (e *entryError) Error() string { return fmt.Sprintf("tar entry %q: %s", e.name, e.why) }

// storeError is a failure to write the store's own folder (disk full,
// permissions...), as opposed to a fault of the image.
type storeError struct{ err error }

func (e *storeError) Error() string { return e.err.Error() }
func (e *storeError) Unwrap() error { return e.err }

// wrote marks an error of a write to the store as a storeError.
func wrote(err error) error {
	if err == nil {
		return nil
	}
	return &storeError{err}
}

// errTooLarge is returned when the image's files exceed the size limit.
type errTooLarge struct{ detail string }

func (e *errTooLarge) Error() string { return e.detail }

// extractor writes the flattened file system of an image into a folder:
// layers are given top layer first, so the first entry seen for a path
// wins, and whiteouts hide what the layers below have at or under a path
// (as mutate.Extract does). Every write goes through an os.Root, so no
// entry can reach outside the folder even if a check here were wrong; the
// checks make hostile entries errors instead of silent skips.
type extractor struct {
	root *os.Root
	// left is how many more bytes of files the image may have.
	left    int64
	entries int
	// seen maps each path decided so far to true for a non-folder (file,
	// link, whiteout) and false for a folder.
	seen map[string]bool
	// opaque holds folders whose lower-layer contents are hidden.
	opaque map[string]bool
	// folders are the folders created, to set modes and sync at the end.
	folders []string
	links   []hardLink
	// symlinks are the symbolic links created, checked at the end.
	symlinks []string
	buf      []byte
}

type hardLink struct{ name, target string }

func newExtractor(root *os.Root, limit int64) *extractor {
	return &extractor{root: root, left: limit, seen: map[string]bool{}, opaque: map[string]bool{}, buf: make([]byte, sparseBlock)}
}

// layer extracts one layer (an uncompressed tar stream), reading it up to
// the end of the archive. Errors are *entryError, *errTooLarge, or what
// reading the stream returned.
func (x *extractor) layer(r io.Reader) error {
	tr := tar.NewReader(r)
	layerOpaque := map[string]bool{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if x.entries++; x.entries > maxEntries {
			return &errTooLarge{fmt.Sprintf("more than %d tar entries", maxEntries)}
		}
		if err := x.entry(tr, hdr, layerOpaque); err != nil {
			return err
		}
	}
	for d := range layerOpaque {
		x.opaque[d] = true
	}
	return nil
}

// entry extracts one tar entry.
func (x *extractor) entry(tr *tar.Reader, hdr *tar.Header, layerOpaque map[string]bool) error {
	name, err := entryName(hdr.Name)
	if err != nil {
		return err
	}
	if name == "." {
		return nil
	}
	dir, base := path.Split(name)
	dir = path.Clean(dir)
	switch {
	case base == opaqueWhiteout:
		layerOpaque[dir] = true
		return nil
	case strings.HasPrefix(base, whiteoutMeta):
		return nil // other AUFS bookkeeping (.wh..wh.plnk...)
	case strings.HasPrefix(base, whiteoutPrefix):
		deleted := base[len(whiteoutPrefix):]
		if deleted == "" || deleted == "." || deleted == ".." {
			return &entryError{hdr.Name, "whiteout of no file"}
		}
		p := path.Join(dir, deleted)
		if _, done := x.seen[p]; !done && !x.hidden(p) {
			x.seen[p] = true
		}
		return nil
	}
	if _, done := x.seen[name]; done || x.hidden(name) {
		return nil
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		x.seen[name] = false
		return x.mkdirs(name)
	case tar.TypeReg, tar.TypeGNUSparse:
		return x.file(name, tr, hdr.Size)
	case tar.TypeSymlink:
		target, err := symlinkTarget(name, hdr.Linkname)
		if err != nil {
			return err
		}
		x.seen[name] = true
		if err := x.mkdirs(dir); err != nil {
			return err
		}
		if err := x.root.Symlink(target, name); err != nil {
			return wrote(err)
		}
		x.symlinks = append(x.symlinks, name)
		return nil
	case tar.TypeLink:
		target, err := entryName(hdr.Linkname)
		if err != nil || target == "." {
			return &entryError{hdr.Name, fmt.Sprintf("hard link to %q, which leads out of the image", hdr.Linkname)}
		}
		x.seen[name] = true
		x.links = append(x.links, hardLink{name, target})
		return x.mkdirs(dir)
	case tar.TypeChar, tar.TypeBlock:
		return &entryError{hdr.Name, "device file"}
	case tar.TypeFifo:
		return &entryError{hdr.Name, "named pipe"}
	default:
		return &entryError{hdr.Name, fmt.Sprintf("unsupported tar entry type %q", hdr.Typeflag)}
	}
}

// entryName checks a tar entry's name and returns it cleaned and relative
// ("." for the root itself).
func entryName(raw string) (string, error) {
	switch {
	case raw == "":
		return "", &entryError{raw, "empty name"}
	case strings.ContainsRune(raw, 0):
		return "", &entryError{raw, "name holds a NUL byte"}
	case strings.HasPrefix(raw, "/"):
		return "", &entryError{raw, "absolute path"}
	}
	for c := range strings.SplitSeq(raw, "/") {
		if c == ".." {
			return "", &entryError{raw, `path with ".."`}
		}
	}
	return path.Clean(raw), nil
}

// symlinkTarget checks the target of a symbolic link at name and returns
// what to write: a target is read as a container would, in the image's
// root, and must not climb out of it; an absolute one is made relative to
// the link's folder, so that it cannot name a file of the host.
func symlinkTarget(name, target string) (string, error) {
	if target == "" || strings.ContainsRune(target, 0) {
		return "", &entryError{name, "symbolic link with an empty or invalid target"}
	}
	dir := path.Dir(name)
	depth := 0
	if !path.IsAbs(target) && dir != "." {
		depth = strings.Count(dir, "/") + 1
	}
	for c := range strings.SplitSeq(target, "/") {
		switch c {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return "", &entryError{name, fmt.Sprintf("symbolic link to %q, which leads out of the image", target)}
			}
		default:
			depth++
		}
	}
	if !path.IsAbs(target) {
		return target, nil
	}
	up := ""
	if dir != "." {
		up = strings.Repeat("../", strings.Count(dir, "/")+1)
	}
	rel := up + strings.TrimPrefix(path.Clean(target), "/")
	if rel == "" {
		rel = "."
	}
	return rel, nil
}

// hidden reports whether an upper layer removed or replaced a folder above
// name: a whiteout, a non-folder, or an opaque folder.
func (x *extractor) hidden(name string) bool {
	for d := path.Dir(name); d != "."; d = path.Dir(d) {
		if x.seen[d] || x.opaque[d] {
			return true
		}
	}
	return false
}

// mkdirs creates the folder dir and its parents, and marks them as
// folders so that no lower layer puts a file or link in their place.
func (x *extractor) mkdirs(dir string) error {
	if dir == "." {
		return nil
	}
	for d := dir; d != "."; d = path.Dir(d) {
		if _, ok := x.seen[d]; ok && d != dir {
			break
		}
		x.seen[d] = false
	}
	if st, err := x.root.Lstat(dir); err == nil && st.IsDir() {
		return nil
	}
	if err := x.root.MkdirAll(dir, folderMode); err != nil {
		return wrote(err)
	}
	for d := dir; d != "."; d = path.Dir(d) {
		x.folders = append(x.folders, d)
	}
	return nil
}

// file writes a regular file of size bytes from r, skipping blocks of
// zeros (the file stays sparse), and syncs it.
func (x *extractor) file(name string, r io.Reader, size int64) error {
	if size < 0 {
		return &entryError{name, "negative size"}
	}
	if size > x.left {
		return &errTooLarge{fmt.Sprintf("file %q of %d bytes exceeds the limit", name, size)}
	}
	x.left -= size
	x.seen[name] = true
	if err := x.mkdirs(path.Dir(name)); err != nil {
		return err
	}
	f, err := x.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
	if err != nil {
		return wrote(err)
	}
	err = copySparse(f, r, size, x.buf)
	if err == nil {
		err = wrote(f.Chmod(fileMode))
	}
	if err == nil {
		err = wrote(f.Sync())
	}
	if cerr := f.Close(); err == nil {
		err = wrote(cerr)
	}
	return err
}

// copySparse copies size bytes from r to f, seeking over blocks of zeros.
// Errors writing f are storeErrors; errors reading r are returned as they
// are (io.ErrUnexpectedEOF when r ends early).
func copySparse(f *os.File, r io.Reader, size int64, buf []byte) error {
	var off int64
	for off < size {
		n := int(min(int64(len(buf)), size-off))
		if _, err := io.ReadFull(r, buf[:n]); err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return err
		}
		if !bytes.Equal(buf[:n], zeroBlock[:n]) {
			if _, err := f.WriteAt(buf[:n], off); err != nil {
				return wrote(err)
			}
		}
		off += int64(n)
	}
	return wrote(f.Truncate(size))
}

// finish creates the hard links, checks that every symbolic link resolves
// inside the image (or to nothing), sets the folders' modes and syncs
// them. Call it after the last layer.
func (x *extractor) finish() error {
	for _, l := range x.links {
		st, err := x.root.Lstat(l.target)
		if err != nil || !st.Mode().IsRegular() {
			return &entryError{l.name, fmt.Sprintf("hard link to %q, which is not a regular file of the image", l.target)}
		}
		if err := x.root.Link(l.target, l.name); err != nil {
			return wrote(err)
		}
	}
	for _, s := range x.symlinks {
		_, err := x.root.Stat(s)
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return &entryError{s, "symbolic link that leads out of the image or loops: " + err.Error()}
		}
	}
	for _, d := range x.folders {
		if err := x.root.Chmod(d, folderMode); err != nil {
			return wrote(err)
		}
	}
	for _, d := range append(x.folders, ".") {
		if err := syncFolder(x.root, d); err != nil {
			return wrote(err)
		}
	}
	return nil
}

// syncFolder flushes a folder's entries to disk.
func syncFolder(root *os.Root, name string) error {
	f, err := root.Open(name)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
