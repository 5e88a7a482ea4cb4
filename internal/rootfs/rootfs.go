// Package rootfs writes the file system of a container image's layers into
// a folder: layers flattened as a container runtime stacks them
// (whiteouts, opaque folders, upper layers winning), every write through
// an os.Root, and every entry that could reach outside the folder refused
// with an error rather than skipped: paths with "..", absolute paths,
// symbolic or hard links leading out, device files, more bytes than a
// limit.
//
// Layers come from registries that are not trusted, so the work of
// extracting them is bounded by their size (limits.go): names longer than
// 4096 bytes, link targets longer than 4095 (an absolute one once made
// relative), a component longer than 255 bytes or more than 256
// components in a name or target, and more than 1,048,576 entries are
// refused with an error naming the limit; and each folder is made once,
// then given its mode and synced opened in its parent's, so that a chain
// of folders costs lookups in proportion to its length, not its square.
package rootfs

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

// File modes of what the Extractor writes: QEMU (another user) reads
// images.
const (
	fileMode   = 0o644
	folderMode = 0o755
)

// sparseBlock is the unit in which runs of zeros are skipped instead of
// written, so that raw disks stay sparse.
const sparseBlock = 64 << 10

var zeroBlock [sparseBlock]byte

// EntryError is an entry of a layer that cannot be extracted safely, or a
// link that the finished file system could not keep.
type EntryError struct {
	// Name is the entry's name as the tar archive has it.
	Name string
	// Why says what is wrong with it.
	Why string
}

func (e *EntryError) Error() string {
	name := e.Name
	if len(name) > 200 {
		name = name[:200] + "..."
	}
	return fmt.Sprintf("tar entry %q: %s", name, e.Why)
}

// WriteError is a failure to write the folder (disk full, permissions...),
// as opposed to a fault of the layers.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// wrote marks an error of a write to the folder as a WriteError.
func wrote(err error) error {
	if err == nil {
		return nil
	}
	return &WriteError{err}
}

// TooLargeError: the layers hold more bytes of files than the limit, or
// more than a million entries.
type TooLargeError struct{ Detail string }

func (e *TooLargeError) Error() string { return e.Detail }

// Extractor writes the flattened file system of an image into a folder:
// layers are given top layer first, so the first entry seen for a path
// wins, and whiteouts hide what the layers below have at or under a path
// (as mutate.Extract does). Every write goes through an os.Root, so no
// entry can reach outside the folder even if a check here were wrong; the
// checks make hostile entries errors instead of silent skips.
type Extractor struct {
	root *os.Root
	// limit and left are how many bytes of files the layers may have in
	// all, and still.
	limit, left int64
	entries     int
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
	// steps counts the components of the paths handed to the os.Root,
	// each a lookup of the kernel's (an openat): the work of extraction
	// beside reading and writing bytes, which tests bound by the layers'
	// size. A symbolic link that the os.Root follows costs more than its
	// path's components.
	steps int64
}

type hardLink struct{ name, target string }

// Size returns the bytes of files written so far.
func (x *Extractor) Size() int64 { return x.limit - x.left }

// New returns an Extractor writing into root at most limit bytes of files.
func New(root *os.Root, limit int64) *Extractor {
	return &Extractor{root: root, limit: limit, left: limit, seen: map[string]bool{}, opaque: map[string]bool{}, buf: make([]byte, sparseBlock)}
}

// Layer extracts one layer (an uncompressed tar stream), reading it up to
// the end of the archive; call it for each layer, the top one first.
// Errors are *EntryError, *TooLargeError, *WriteError, or what reading the
// stream returned (a tar or decompression error, io.ErrUnexpectedEOF for a
// truncated stream).
func (x *Extractor) Layer(r io.Reader) error {
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
			return &TooLargeError{fmt.Sprintf("more than %d tar entries", maxEntries)}
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
func (x *Extractor) entry(tr *tar.Reader, hdr *tar.Header, layerOpaque map[string]bool) error {
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
			return &EntryError{hdr.Name, "whiteout of no file"}
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
		if err := x.root.Symlink(target, x.at(name)); err != nil {
			return wrote(err)
		}
		x.symlinks = append(x.symlinks, name)
		return nil
	case tar.TypeLink:
		if why := checkComponents(hdr.Linkname); why != "" {
			return &EntryError{hdr.Name, "hard link to a target with " + why}
		}
		target, err := entryName(hdr.Linkname)
		if err != nil || target == "." {
			return &EntryError{hdr.Name, fmt.Sprintf("hard link to %q, which leads out of the image", hdr.Linkname)}
		}
		x.seen[name] = true
		x.links = append(x.links, hardLink{name, target})
		return x.mkdirs(dir)
	case tar.TypeChar, tar.TypeBlock:
		return &EntryError{hdr.Name, "device file"}
	case tar.TypeFifo:
		return &EntryError{hdr.Name, "named pipe"}
	default:
		return &EntryError{hdr.Name, fmt.Sprintf("unsupported tar entry type %q", hdr.Typeflag)}
	}
}

// entryName checks a tar entry's name and returns it cleaned and relative
// ("." for the root itself).
func entryName(raw string) (string, error) {
	switch {
	case raw == "":
		return "", &EntryError{raw, "empty name"}
	case len(raw) > maxPath:
		return "", &EntryError{raw, fmt.Sprintf("name longer than %d bytes", maxPath)}
	case strings.ContainsRune(raw, 0):
		return "", &EntryError{raw, "name holds a NUL byte"}
	case strings.HasPrefix(raw, "/"):
		return "", &EntryError{raw, "absolute path"}
	}
	for c := range strings.SplitSeq(raw, "/") {
		if c == ".." {
			return "", &EntryError{raw, `path with ".."`}
		}
	}
	if why := checkComponents(raw); why != "" {
		return "", &EntryError{raw, "name with " + why}
	}
	return path.Clean(raw), nil
}

// symlinkTarget checks the target of a symbolic link at name and returns
// what to write: a target is read as a container would, in the image's
// root, and must not climb out of it; an absolute one is made relative to
// the link's folder, so that it cannot name a file of the host. What it
// returns is shorter than maxPath, as Linux needs of a link's target.
func symlinkTarget(name, target string) (string, error) {
	switch {
	case target == "":
		return "", &EntryError{name, "symbolic link with an empty target"}
	case len(target) >= maxPath:
		return "", &EntryError{name, fmt.Sprintf("symbolic link to a target of %d bytes, longer than %d", len(target), maxPath-1)}
	case strings.ContainsRune(target, 0):
		return "", &EntryError{name, "symbolic link to a target holding a NUL byte"}
	}
	if why := checkComponents(target); why != "" {
		return "", &EntryError{name, "symbolic link to a target with " + why}
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
				return "", &EntryError{name, fmt.Sprintf("symbolic link to %q, which leads out of the image", target)}
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
	if len(rel) >= maxPath {
		return "", &EntryError{name, fmt.Sprintf("symbolic link to an absolute target that, made relative to the link's folder, is %d bytes, longer than %d", len(rel), maxPath-1)}
	}
	return rel, nil
}

// hidden reports whether an upper layer removed or replaced a folder above
// name: a whiteout, a non-folder, or an opaque folder.
func (x *Extractor) hidden(name string) bool {
	for d := path.Dir(name); d != "."; d = path.Dir(d) {
		if x.seen[d] || x.opaque[d] {
			return true
		}
	}
	return false
}

// file writes a regular file of size bytes from r, skipping blocks of
// zeros (the file stays sparse), and syncs it.
func (x *Extractor) file(name string, r io.Reader, size int64) error {
	if size < 0 {
		return &EntryError{name, "negative size"}
	}
	if size > x.left {
		return &TooLargeError{fmt.Sprintf("file %q of %d bytes exceeds the limit", name, size)}
	}
	x.left -= size
	x.seen[name] = true
	if err := x.mkdirs(path.Dir(name)); err != nil {
		return err
	}
	f, err := x.root.OpenFile(x.at(name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, fileMode)
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

// Finish creates the hard links, checks that every symbolic link resolves
// inside the folder (or to nothing), sets the folders' modes and syncs
// them. Call it after the last layer; after an error, the folder must be
// discarded.
func (x *Extractor) Finish() error {
	for _, l := range x.links {
		st, err := x.root.Lstat(x.at(l.target))
		if err != nil || !st.Mode().IsRegular() {
			return &EntryError{l.name, fmt.Sprintf("hard link to %q, which is not a regular file of the image", l.target)}
		}
		if err := x.root.Link(x.at(l.target), x.at(l.name)); err != nil {
			return wrote(err)
		}
	}
	for _, s := range x.symlinks {
		_, err := x.root.Stat(x.at(s))
		if err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return &EntryError{s, "symbolic link that leads out of the image or loops: " + err.Error()}
		}
	}
	return x.settleFolders()
}

// at counts the lookups that the os.Root makes for the path p (one per
// component) and returns p.
func (x *Extractor) at(p string) string {
	x.steps += int64(strings.Count(p, "/") + 1)
	return p
}
