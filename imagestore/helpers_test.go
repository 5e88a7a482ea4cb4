package imagestore

import (
	"archive/tar"
	"bytes"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// testRegistry is go-containerregistry's registry (the Distribution API,
// blobs in memory) served over plain HTTP on loopback, counting the
// requests it gets. Intercept, when set, sees each request first and may
// answer it (returning true).
type testRegistry struct {
	Host      string // host:port
	handler   http.Handler
	srv       *httptest.Server
	requests  atomic.Int64
	blobGets  atomic.Int64
	mu        sync.Mutex
	intercept func(w http.ResponseWriter, r *http.Request) bool
}

func newRegistry(t testing.TB) *testRegistry {
	t.Helper()
	r := &testRegistry{handler: registry.New(registry.Logger(log.New(io.Discard, "", 0)))}
	r.srv = httptest.NewServer(r)
	t.Cleanup(r.srv.Close)
	r.Host = strings.TrimPrefix(r.srv.URL, "http://")
	return r
}

// ServeHTTP counts the request and passes it to the intercept or the
// registry.
func (r *testRegistry) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.requests.Add(1)
	if req.Method == http.MethodGet && strings.Contains(req.URL.Path, "/blobs/sha256:") {
		r.blobGets.Add(1)
	}
	r.mu.Lock()
	icpt := r.intercept
	r.mu.Unlock()
	if icpt != nil && icpt(w, req) {
		return
	}
	r.handler.ServeHTTP(w, req)
}

// setIntercept sets (or with nil, clears) the intercept.
func (r *testRegistry) setIntercept(f func(w http.ResponseWriter, r *http.Request) bool) {
	r.mu.Lock()
	r.intercept = f
	r.mu.Unlock()
}

// reset zeroes the counters (after pushing).
func (r *testRegistry) reset() {
	r.requests.Store(0)
	r.blobGets.Store(0)
}

// push writes img to the registry as repoTag ("repo:tag") and returns the
// full reference and the image's digest; counters are reset.
func (r *testRegistry) push(t testing.TB, repoTag string, img v1.Image) (string, v1.Hash) {
	t.Helper()
	ref := r.Host + "/" + repoTag
	if err := remote.Write(parseRef(t, ref), img); err != nil {
		t.Fatal(err)
	}
	r.reset()
	return ref, must(t)(img.Digest())
}

// pushIndex writes an index to the registry as repoTag.
func (r *testRegistry) pushIndex(t testing.TB, repoTag string, idx v1.ImageIndex) (string, v1.Hash) {
	t.Helper()
	ref := r.Host + "/" + repoTag
	if err := remote.WriteIndex(parseRef(t, ref), idx); err != nil {
		t.Fatal(err)
	}
	r.reset()
	return ref, must(t)(idx.Digest())
}

// parseRef parses a reference to the loopback registry.
func parseRef(t testing.TB, ref string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(ref, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// must returns a function that fails t on an error and returns the value.
func must(t testing.TB) func(v1.Hash, error) v1.Hash {
	return func(h v1.Hash, err error) v1.Hash {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
}

// entry is one tar entry of a test layer.
type entry struct {
	name     string
	typeflag byte
	body     string
	link     string
	size     int64 // when set, the header's size (else len(body))
}

// file, dir, symlink and hardlink build entries.
func file(name, body string) entry { return entry{name: name, typeflag: tar.TypeReg, body: body} }
func dir(name string) entry        { return entry{name: name, typeflag: tar.TypeDir} }
func symlink(name, target string) entry {
	return entry{name: name, typeflag: tar.TypeSymlink, link: target}
}
func hardlink(name, target string) entry {
	return entry{name: name, typeflag: tar.TypeLink, link: target}
}

// tarOf writes the entries as a tar archive.
func tarOf(t testing.TB, entries ...entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		size := int64(len(e.body))
		if e.typeflag != tar.TypeReg {
			size = 0
		}
		if e.size != 0 {
			size = e.size
		}
		hdr := &tar.Header{Name: e.name, Typeflag: e.typeflag, Linkname: e.link, Size: size, Mode: 0o644, Format: tar.FormatPAX}
		if e.typeflag == tar.TypeChar || e.typeflag == tar.TypeBlock {
			hdr.Devmajor, hdr.Devminor = 1, 3
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.body); err != nil && e.size == 0 {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil && !strings.Contains(err.Error(), "missed writing") {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// layerOf is a gzip-compressed layer of the entries.
func layerOf(t testing.TB, entries ...entry) v1.Layer {
	t.Helper()
	return layerOfTar(t, tarOf(t, entries...))
}

// layerOfTar is a gzip-compressed layer of an uncompressed stream (its
// diff ID is right even if the stream is no valid tar).
func layerOfTar(t testing.TB, data []byte) v1.Layer {
	t.Helper()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// imageOf is a linux/amd64 image of the layers (the first is the lowest).
func imageOf(t testing.TB, layers ...v1.Layer) v1.Image {
	t.Helper()
	return imageFor(t, "amd64", layers...)
}

// imageFor is an image of the layers for linux/arch.
func imageFor(t testing.TB, arch string, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	return img
}

// indexOf is an index of the images with their platforms.
func indexOf(t testing.TB, imgs map[string]v1.Image) v1.ImageIndex {
	t.Helper()
	var adds []mutate.IndexAddendum
	for arch, img := range imgs {
		adds = append(adds, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	return mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex), adds...)
}

// newStore opens a store in a fresh folder below a folder of its own, so
// that tests can check that nothing was written beside it.
func newStore(t testing.TB, cfg Config) *Store {
	t.Helper()
	if cfg.Root == "" {
		cfg.Root = filepath.Join(t.TempDir(), "store")
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// storeFiles lists every path under the store's folder and beside it
// (relative to the store's parent), sorted: what a failed pull must not
// have changed.
func storeFiles(t testing.TB, s *Store) []string {
	t.Helper()
	var out []string
	parent := filepath.Dir(s.root)
	err := filepath.WalkDir(parent, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if rel, _ := filepath.Rel(parent, p); rel != "." && rel != "store/.lock" {
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// emptyStore is storeFiles of a store that holds nothing.
var emptyStore = []string{"store", "store/.refs", "store/.tmp", "store/sha256"}

// readFile returns a file's content, failing t.
func readFile(t testing.TB, p string) string {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// listenOn listens on addr, failing t.
func listenOn(t testing.TB, addr string) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
