package imagestore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/vmi2libvirt/vmi2libvirt/internal/rootfs"
)

// source says where an image's blobs come from and how to read them.
type source struct {
	// kind is recorded in image.json: registry, oci-layout, docker-archive.
	kind string
	// compressed: read each layer as stored and check it against its
	// digest (go-containerregistry checks a registry's blobs itself), rather
	// than read go-containerregistry's uncompressed stream and check that
	// against the config's diff ID (a docker save tarball holds layers
	// uncompressed, and its digests would be computed, not checked).
	compressed bool
	// guard is the pull's transport guard (registry pulls only).
	guard *plainHTTPGuard
}

// sortErr sorts an error of reading the image's manifest, config or a
// layer's opening from the source.
func (src source) sortErr(err error) error {
	if src.kind == "registry" {
		return registryKind(err, src.guard)
	}
	return ErrBadImage
}

// sortBlobErr sorts an error of fetching a blob (the config, a layer):
// an HTTP status or a network error as registryKind does; any other error
// of a registry is go-containerregistry's verdict on the blob's content
// (its size or digest), which has no type of its own.
func (src source) sortBlobErr(err error) error {
	var te *transport.Error
	if src.kind != "registry" || errors.As(err, &te) || errors.Is(err, ErrPlainHTTP) || transient(err) {
		return src.sortErr(err)
	}
	return ErrDigestMismatch
}

// errPruned: the image was pruned between its extraction and its use.
var errPruned = errors.New("image pruned while being resolved")

// install extracts img into the store unless the store has it, records
// that the reference refName names it, and returns it.
func (s *Store) install(ctx context.Context, raw, refName string, img v1.Image, src source) (*Image, error) {
	d, err := img.Digest()
	if err != nil {
		return nil, failure(raw, src.sortErr(err), "manifest", err)
	}
	for attempt := 0; ; attempt++ {
		_, err := s.extracts.do(ctx, d.String(), func(ctx context.Context) (struct{}, error) {
			return struct{}{}, s.extract(ctx, raw, d, img, src)
		})
		if err != nil {
			return nil, asError(raw, err)
		}
		out, err := s.useRef(raw, refName, d)
		switch {
		case err == nil:
			return out, nil
		case errors.Is(err, errPruned) && attempt < 2:
			continue
		}
		return nil, asError(raw, err)
	}
}

// extract writes the file system of img, whose manifest digest is d, into
// the store, unless the store has it already.
func (s *Store) extract(ctx context.Context, raw string, d v1.Hash, img v1.Image, src source) error {
	if ok, err := s.has(d); err != nil || ok {
		return asError(raw, err)
	}
	fail := func(kind error, detail string, cause error) error {
		e := failure(raw, kind, detail, cause)
		e.Digest = d.String()
		return e
	}
	m, err := img.Manifest()
	if err != nil {
		return fail(src.sortErr(err), "manifest", err)
	}
	if t := m.Config.MediaType; t != types.DockerConfigJSON && t != types.OCIConfigJSON {
		return fail(ErrBadImage, fmt.Sprintf("config of media type %q: not a container image", t), nil)
	}
	rawCfg, err := img.RawConfigFile()
	if err != nil {
		return fail(src.sortBlobErr(err), "config", err)
	}
	if sum := sha256.Sum256(rawCfg); m.Config.Digest.Algorithm != "sha256" || hex.EncodeToString(sum[:]) != m.Config.Digest.Hex {
		return fail(ErrDigestMismatch, "config "+m.Config.Digest.String(), nil)
	}
	cfg, err := v1.ParseConfigFile(bytes.NewReader(rawCfg))
	if err != nil {
		return fail(ErrBadImage, "config", err)
	}
	if err := checkPlatform(cfg); err != nil {
		return fail(ErrWrongPlatform, err.Error(), nil)
	}
	if len(cfg.RootFS.DiffIDs) != len(m.Layers) {
		return fail(ErrBadImage, fmt.Sprintf("%d layers but %d diff_ids in the config", len(m.Layers), len(cfg.RootFS.DiffIDs)), nil)
	}
	total := m.Config.Size
	for i, l := range m.Layers {
		if !slices.Contains(layerTypes, l.MediaType) {
			return fail(ErrBadImage, fmt.Sprintf("layer %d of media type %q", i, l.MediaType), nil)
		}
		total += l.Size
	}
	layers, err := img.Layers()
	if err != nil {
		return fail(src.sortErr(err), "layers", err)
	}

	tmp, err := s.newTemp()
	if err != nil {
		return fail(ErrStorage, "", err)
	}
	defer tmp.remove()
	rootDir := filepath.Join(tmp.path, "rootfs")
	if err := os.Mkdir(rootDir, folderMode); err != nil {
		return fail(ErrStorage, "", err)
	}
	root, err := os.OpenRoot(rootDir)
	if err != nil {
		return fail(ErrStorage, "", err)
	}
	defer root.Close()

	var done atomic.Int64
	done.Add(m.Config.Size)
	if src.kind == "registry" {
		stop := s.reportProgress(raw, d, total, &done)
		defer stop()
	}
	x := rootfs.New(root, s.maxSize)
	for i := len(layers) - 1; i >= 0; i-- {
		if kind, err := s.extractLayer(ctx, x, layers[i], m.Layers[i], cfg.RootFS.DiffIDs[i], src, &done); err != nil {
			return fail(kind, fmt.Sprintf("layer %d (%s)", i, m.Layers[i].Digest), err)
		}
	}
	if err := x.Finish(); err != nil {
		return fail(extractKind(err), "", err)
	}
	rec := record{Digest: d.String(), Config: m.Config.Digest.String(), Size: x.Size(), Source: src.kind}
	if err := rec.write(tmp.path); err != nil {
		return fail(ErrStorage, "", err)
	}
	for _, dir := range []string{tmp.path, rootDir} { // whatever the umask
		if err := os.Chmod(dir, folderMode); err != nil {
			return fail(ErrStorage, "", err)
		}
	}
	if err := s.publish(tmp, d); err != nil {
		return fail(ErrStorage, "", err)
	}
	return nil
}

// extractLayer extracts one layer and checks it against its digest (read
// as stored) or its diff ID (read uncompressed). It returns the condition
// and the cause of a failure.
func (s *Store) extractLayer(ctx context.Context, x *rootfs.Extractor, l v1.Layer, desc v1.Descriptor, diffID v1.Hash, src source, done *atomic.Int64) (error, error) {
	var b *blobReader
	var tarStream io.ReadCloser
	if src.compressed {
		rc, err := l.Compressed()
		if err != nil {
			return src.sortBlobErr(err), err
		}
		want, size := desc.Digest, desc.Size
		if src.kind == "registry" {
			want, size = v1.Hash{}, -1 // checked by go-containerregistry
		}
		b = newBlobReader(rc, want, size, done)
		b.local = src.kind != "registry"
		if tarStream, err = uncompress(b, desc.MediaType); err != nil {
			b.Close()
			return b.kind(ctx, err), err
		}
	} else {
		rc, err := l.Uncompressed()
		if err != nil {
			return src.sortErr(err), err
		}
		b = newBlobReader(rc, diffID, -1, done)
		b.local = true
		tarStream = b
	}
	defer tarStream.Close()
	err := x.Layer(tarStream)
	if err == nil {
		// Read to the end, so that the digests are checked.
		var n int64
		left := s.maxSize - x.Size()
		n, err = io.CopyN(io.Discard, tarStream, left+1)
		if err == nil || n > left {
			return ErrTooLarge, fmt.Errorf("more than %d bytes after the end of the tar archive", left)
		}
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
	}
	if kind := extractKind(err); kind != ErrBadImage {
		return kind, err
	}
	// Not a tar, or a refused entry: unless the blob itself was cut off
	// or does not match its digest.
	b.drain()
	return b.kind(ctx, err), err
}

// extractKind sorts the errors of package rootfs: too large, a failed
// write, else (a refused entry, a stream that is no tar) ErrBadImage.
func extractKind(err error) error {
	var tl *rootfs.TooLargeError
	var we *rootfs.WriteError
	switch {
	case errors.As(err, &tl):
		return ErrTooLarge
	case errors.As(err, &we):
		return ErrStorage
	}
	return ErrBadImage
}
