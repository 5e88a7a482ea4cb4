package imagestore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net"
	"sync/atomic"
	"syscall"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// blobReader reads a blob (a layer as stored, or a stream to be checked
// against a digest), counting bytes for progress and hashing them. It
// remembers how its source failed, so that a cut connection (retry later)
// is told apart from content that does not match its digest or from a
// layer that is not a tar (permanent).
type blobReader struct {
	src  io.ReadCloser
	want v1.Hash
	// size is the expected size, or -1 when unknown.
	size int64
	h    hash.Hash
	n    int64
	done *atomic.Int64
	// srcErr is the first error of src other than io.EOF.
	srcErr error
	// mismatch is set when src ended with other content than want.
	mismatch error
	// local: src is a file of this host (an import), whose read errors
	// are the source's fault, not the network's.
	local bool
}

func newBlobReader(src io.ReadCloser, want v1.Hash, size int64, done *atomic.Int64) *blobReader {
	b := &blobReader{src: src, want: want, size: size, done: done}
	if want.Algorithm != "" {
		b.h = sha256.New()
	}
	return b
}

// Read implements io.Reader; at the end of src it checks the digest and
// size (those given) and returns a mismatch instead of io.EOF.
func (b *blobReader) Read(p []byte) (int, error) {
	n, err := b.src.Read(p)
	if b.h != nil {
		b.h.Write(p[:n])
	}
	b.n += int64(n)
	if b.done != nil {
		b.done.Add(int64(n))
	}
	switch {
	case err == nil:
	case errors.Is(err, io.EOF):
		if b.mismatch = b.check(); b.mismatch != nil {
			return n, b.mismatch
		}
	case b.srcErr == nil:
		b.srcErr = err
	}
	return n, err
}

// Close implements io.Closer.
func (b *blobReader) Close() error { return b.src.Close() }

// check compares what was read with the expected digest and size.
func (b *blobReader) check() error {
	if b.size >= 0 && b.n != b.size {
		return fmt.Errorf("%s: %d bytes, want %d", b.want, b.n, b.size)
	}
	if b.want.Algorithm == "" {
		return nil
	}
	if got := hex.EncodeToString(b.h.Sum(nil)); b.want.Algorithm != "sha256" || got != b.want.Hex {
		return fmt.Errorf("got sha256:%s, want %s", got, b.want)
	}
	return nil
}

// kind sorts the error that reading through b ended with: the context's
// end or a failing source (retry later), a digest mismatch, or else
// (content that verified but does not read as a tar) a bad image.
func (b *blobReader) kind(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return ErrUnavailable
	case b.mismatch != nil:
		return ErrDigestMismatch
	case b.srcErr != nil && b.local:
		return ErrBadImage
	case b.srcErr != nil && transient(b.srcErr):
		return ErrUnavailable
	case b.srcErr != nil:
		// go-containerregistry verifies remote blobs itself, with errors of
		// no type of its own: a source error that is not the network's is
		// its verdict on the content.
		return ErrDigestMismatch
	}
	return ErrBadImage
}

// drain reads the rest of the blob, so that its digest is checked, after
// its content failed to read as a layer.
func (b *blobReader) drain() {
	if b.mismatch == nil && b.srcErr == nil {
		_, _ = io.Copy(io.Discard, b)
	}
}

// transient reports whether a source error is the network's: a
// connection cut, reset or timed out.
func transient(err error) bool {
	var ne net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// compressedBlob presents a blobReader over a layer as stored, so that
// partial.CompressedToLayer decompresses it as go-containerregistry does
// (gzip, zstd, or none, by its first bytes).
type compressedBlob struct {
	r         *blobReader
	mediaType types.MediaType
}

func (c compressedBlob) Digest() (v1.Hash, error)            { return c.r.want, nil }
func (c compressedBlob) Compressed() (io.ReadCloser, error)  { return c.r, nil }
func (c compressedBlob) Size() (int64, error)                { return c.r.size, nil }
func (c compressedBlob) MediaType() (types.MediaType, error) { return c.mediaType, nil }

// uncompress returns the tar stream of a layer read through b.
func uncompress(b *blobReader, mediaType types.MediaType) (io.ReadCloser, error) {
	l, err := partial.CompressedToLayer(compressedBlob{b, mediaType})
	if err != nil {
		return nil, err
	}
	return l.Uncompressed()
}

// layerTypes are the layer media types the store extracts.
var layerTypes = []types.MediaType{
	types.DockerLayer, types.DockerUncompressedLayer,
	types.OCILayer, types.OCILayerZStd, types.OCIUncompressedLayer,
	types.OCIRestrictedLayer, types.OCIUncompressedRestrictedLayer,
}
