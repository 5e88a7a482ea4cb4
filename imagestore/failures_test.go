package imagestore

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	k8sv1 "k8s.io/api/core/v1"
)

// TestRegistryRestartedMidPull cuts a pull off by closing the registry
// (listener and connections) half way through a layer, then serves the
// same registry again on the same address: the cut pull leaves nothing,
// and a retry succeeds.
func TestRegistryRestartedMidPull(t *testing.T) {
	reg := newRegistry(t)
	disk := diskBytes(5, 4<<20)
	layer := layerOf(t, file("disk/disk.img", disk))
	ref, _ := reg.push(t, "disks/big:1", imageOf(t, layer))
	ld := must(t)(layer.Digest()).String()

	// A second server of the same registry, on an address of its own, so
	// it can be closed and started again there.
	ln := listenOn(t, "127.0.0.1:0")
	addr := ln.Addr().String()
	halfSent := make(chan struct{})
	var once sync.Once
	var cutting atomic.Bool
	cutting.Store(true)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if cutting.Load() && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+ld) {
			rec := httptest.NewRecorder()
			reg.ServeHTTP(rec, r)
			body := rec.Body.Bytes()
			w.Header().Set("Content-Length", fmt.Sprint(len(body)))
			w.WriteHeader(http.StatusOK)
			w.Write(body[:len(body)/2])
			w.(http.Flusher).Flush()
			once.Do(func() { close(halfSent) })
			<-r.Context().Done()
			return
		}
		reg.ServeHTTP(w, r)
	})
	srv := &http.Server{Handler: handler}
	go srv.Serve(ln)
	go func() {
		<-halfSent
		srv.Close() // the registry goes away mid-blob
	}()

	s := newStore(t, Config{})
	viaRestarted := strings.Replace(ref, reg.Host, addr, 1)
	_, err := s.Resolve(context.Background(), Request{Reference: viaRestarted})
	if !errors.Is(err, ErrUnavailable) || !Retryable(err) {
		t.Fatalf("pull cut off: %v, want ErrUnavailable", err)
	}
	if got := storeFiles(t, s); !slices.Equal(got, emptyStore) {
		t.Errorf("store after the cut: %v", got)
	}

	// The registry comes back on the same address.
	cutting.Store(false)
	srv2 := &http.Server{Handler: handler}
	go srv2.Serve(listenOn(t, addr))
	t.Cleanup(func() { srv2.Close() })
	img, err := s.Resolve(context.Background(), Request{Reference: viaRestarted})
	if err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(img.Dir, "disk/disk.img")) != disk {
		t.Error("disk differs after the retry")
	}
}

// TestRegistryHangs bounds a pull from a registry that stops answering by
// the caller's context: the pull ends, and nothing is left.
func TestRegistryHangs(t *testing.T) {
	reg := newRegistry(t)
	layer := layerOf(t, file("disk/disk.img", diskBytes(6, 1<<20)))
	ref, _ := reg.push(t, "disks/hang:1", imageOf(t, layer))
	ld := must(t)(layer.Digest()).String()
	size, err := layer.Size()
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	reg.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if !strings.HasSuffix(r.URL.Path, "/blobs/"+ld) {
			return false
		}
		w.Header().Set("Content-Length", fmt.Sprint(size))
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select { // sends headers, then nothing
		case <-r.Context().Done():
		case <-release:
		}
		return true
	})
	s := newStore(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = s.Resolve(ctx, Request{Reference: ref})
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want ErrUnavailable and the deadline", err)
	}
	if got := storeFiles(t, s); !slices.Equal(got, emptyStore) {
		t.Errorf("store after the hang: %v", got)
	}
}

// TestDigestMismatch serves a layer or config with one byte changed, or a
// manifest other than the digest asked for.
func TestDigestMismatch(t *testing.T) {
	reg := newRegistry(t)
	layer := layerOf(t, file("disk/disk.img", diskBytes(7, 256<<10)))
	img := imageOf(t, layer)
	ref, d := reg.push(t, "disks/corrupt:1", img)
	cfg := must(t)(img.ConfigName()).String()
	ld := must(t)(layer.Digest()).String()

	corrupt := func(suffix string) func(w http.ResponseWriter, r *http.Request) bool {
		return func(w http.ResponseWriter, r *http.Request) bool {
			if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, suffix) {
				return false
			}
			rec := httptest.NewRecorder()
			reg.handler.ServeHTTP(rec, r)
			body := rec.Body.Bytes()
			body[len(body)/2] ^= 0x01
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			w.Write(body)
			return true
		}
	}
	for _, c := range []struct {
		name, suffix, ref string
	}{
		{"layer", "/blobs/" + ld, ref},
		{"config", "/blobs/" + cfg, ref},
		{"manifest by digest", "/manifests/" + d.String(), strings.TrimSuffix(ref, ":1") + "@" + d.String()},
	} {
		t.Run(c.name, func(t *testing.T) {
			reg.setIntercept(corrupt(c.suffix))
			defer reg.setIntercept(nil)
			s := newStore(t, Config{})
			_, err := s.Resolve(context.Background(), Request{Reference: c.ref})
			if !errors.Is(err, ErrDigestMismatch) || !Retryable(err) {
				t.Fatalf("got %v, want ErrDigestMismatch", err)
			}
			if got := storeFiles(t, s); !slices.Equal(got, emptyStore) {
				t.Errorf("store after the mismatch: %v", got)
			}
		})
	}
}

func TestNotFound(t *testing.T) {
	reg := newRegistry(t)
	ref, _ := reg.push(t, "disks/here:1", imageOf(t, layerOf(t, file("disk/d", "d"))))
	s := newStore(t, Config{})
	for _, r := range []string{
		strings.TrimSuffix(ref, ":1") + ":2",
		reg.Host + "/disks/nowhere:1",
		reg.Host + "/disks/here@sha256:" + hex64,
	} {
		_, err := s.Resolve(context.Background(), Request{Reference: r})
		if !errors.Is(err, ErrNotFound) || Retryable(err) || !strings.HasPrefix(err.Error(), "image "+r+": ") {
			t.Errorf("%s: %v, want ErrNotFound naming it", r, err)
		}
	}
	for _, r := range []string{"UPPER/case:1", "a:b:c", "", "x@sha256:12"} {
		if _, err := s.Resolve(context.Background(), Request{Reference: r}); !errors.Is(err, ErrBadReference) {
			t.Errorf("%q: %v, want ErrBadReference", r, err)
		}
	}
	// A registry that is not there.
	ln := listenOn(t, "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	if _, err := s.Resolve(context.Background(), Request{Reference: addr + "/x:1"}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("closed port: %v, want ErrUnavailable", err)
	}
	if got := storeFiles(t, s); !slices.Equal(got, emptyStore) {
		t.Errorf("store: %v", got)
	}
}

// TestCredentials puts the registry behind basic authentication: no
// credentials is ErrUnauthorized; credentials from the request, or from a
// Docker config the default keychain reads, pass.
func TestCredentials(t *testing.T) {
	reg := newRegistry(t)
	ref, _ := reg.push(t, "private/disk:1", imageOf(t, layerOf(t, file("disk/d", "secret"))))
	reg.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if u, p, ok := r.BasicAuth(); ok && u == "vmi" && p == "s3cret" {
			return false
		}
		w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
		w.WriteHeader(http.StatusUnauthorized)
		return true
	})
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials at all
	s := newStore(t, Config{})
	if _, err := s.Resolve(context.Background(), Request{Reference: ref}); !errors.Is(err, ErrUnauthorized) || Retryable(err) {
		t.Fatalf("anonymous: %v, want ErrUnauthorized", err)
	}
	if _, err := s.Resolve(context.Background(), Request{Reference: ref, Auth: &authn.Basic{Username: "vmi", Password: "wrong"}}); !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("wrong password: %v, want ErrUnauthorized", err)
	}
	img, err := s.Resolve(context.Background(), Request{Reference: ref, Auth: &authn.Basic{Username: "vmi", Password: "s3cret"}})
	if err != nil || readFile(t, filepath.Join(img.Dir, "disk/d")) != "secret" {
		t.Fatalf("with the request's credentials: %v", err)
	}

	docker := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte("vmi:s3cret"))
	if err := os.WriteFile(filepath.Join(docker, "config.json"), []byte(`{"auths":{"`+reg.Host+`":{"auth":"`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("DOCKER_CONFIG", docker)
	s2 := newStore(t, Config{})
	if _, err := s2.Resolve(context.Background(), Request{Reference: ref, PullPolicy: k8sv1.PullAlways}); err != nil {
		t.Fatalf("with the Docker config's credentials: %v", err)
	}
}

// recordingTransport records the requests it is given and answers none:
// what the store would send to a registry that is not on loopback.
type recordingTransport struct {
	mu   sync.Mutex
	urls []string
}

func (rt *recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rt.mu.Lock()
	rt.urls = append(rt.urls, req.URL.Scheme+"://"+req.URL.Host)
	rt.mu.Unlock()
	return nil, errors.New("no network in this test")
}

// TestPlainHTTP checks which registries may be reached over plain HTTP.
// Requests to the non-loopback ones go to a recording transport that
// answers nothing, so no packet leaves the host.
func TestPlainHTTP(t *testing.T) {
	rt := &recordingTransport{}
	s := newStore(t, Config{Transport: rt, PlainHTTPRegistries: []string{"registry.lan:5000", "mirror.lan"}})
	for reg, want := range map[string]bool{
		"localhost": true, "localhost:5000": true, "127.0.0.1:5000": true, "127.1.2.3": true, "[::1]:5000": true,
		"registry.lan:5000": true, "mirror.lan": true, "mirror.lan:443": true, "REGISTRY.LAN:5000": true,
		"registry.lan": false, "registry.lan:5001": false, "10.1.2.3:5000": false, "192.168.1.1": false,
		"quay.io": false, "localhost.example.com": false, "127.0.0.1.example.com": false,
	} {
		if got := s.plainHTTPAllowed(reg); got != want {
			t.Errorf("plainHTTPAllowed(%q) = %v, want %v", reg, got, want)
		}
	}

	// go-containerregistry would fall back to plain HTTP for a private
	// address; the store does not let it.
	_, err := s.Resolve(context.Background(), Request{Reference: "10.1.2.3:5000/disk:1"})
	if !errors.Is(err, ErrPlainHTTP) {
		t.Errorf("private address: %v, want ErrPlainHTTP", err)
	}
	_, err = s.Resolve(context.Background(), Request{Reference: "registry.example:5000/disk:1"})
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("public name: %v, want ErrUnavailable", err)
	}
	for _, u := range rt.urls {
		if !strings.HasPrefix(u, "https://") {
			t.Errorf("a plain HTTP request reached the transport: %s", u)
		}
	}
	if len(rt.urls) == 0 {
		t.Error("no request was attempted")
	}
}

// TestLoopbackRegistries pulls over plain HTTP from a registry on another
// loopback address, which go-containerregistry alone would reach over
// HTTPS only.
func TestLoopbackRegistries(t *testing.T) {
	reg := newRegistry(t)
	ref, _ := reg.push(t, "disks/lo:1", imageOf(t, layerOf(t, file("disk/d", "lo"))))
	ln := listenOn(t, "127.0.0.2:0")
	srv := &http.Server{Handler: reg}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	s := newStore(t, Config{})
	other := strings.Replace(ref, reg.Host, ln.Addr().String(), 1)
	if img, err := s.Resolve(context.Background(), Request{Reference: other}); err != nil || readFile(t, filepath.Join(img.Dir, "disk/d")) != "lo" {
		t.Fatalf("127.0.0.2: %v", err)
	}
}

// TestProgress holds a layer half sent until a progress report has seen
// it, then lets it finish.
func TestProgress(t *testing.T) {
	reg := newRegistry(t)
	layer := layerOf(t, file("disk/disk.img", diskBytes(8, 2<<20)))
	img := imageOf(t, layer)
	ref, d := reg.push(t, "disks/progress:1", img)
	ld := must(t)(layer.Digest()).String()
	half := make(chan struct{})
	var once sync.Once
	reg.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+ld) {
			return false
		}
		rec := httptest.NewRecorder()
		reg.handler.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		w.Header().Set("Content-Length", fmt.Sprint(len(body)))
		w.WriteHeader(http.StatusOK)
		w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		<-half
		w.Write(body[len(body)/2:])
		return true
	})
	var mu sync.Mutex
	var reports []Progress
	s := newStore(t, Config{ProgressInterval: time.Millisecond, Progress: func(p Progress) {
		mu.Lock()
		reports = append(reports, p)
		mu.Unlock()
		if p.Done > p.Total/3 && !p.Finished {
			once.Do(func() { close(half) })
		}
	}})
	if _, err := s.Resolve(context.Background(), Request{Reference: ref}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reports) < 2 {
		t.Fatalf("%d reports", len(reports))
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	total := m.Config.Size + m.Layers[0].Size
	mid, last := reports[0], reports[len(reports)-1]
	if mid.Image != ref || mid.Digest != d.String() || mid.Total != total || mid.Done <= 0 || mid.Done >= total || mid.Finished {
		t.Errorf("first report %+v, want part of %d", mid, total)
	}
	if !last.Finished || last.Done != total {
		t.Errorf("last report %+v, want all %d finished", last, total)
	}
	for i := 1; i < len(reports); i++ {
		if reports[i].Done < reports[i-1].Done {
			t.Errorf("progress went back: %+v after %+v", reports[i], reports[i-1])
		}
	}
}

// TestCallerLeavesSharedPull: of two callers sharing a pull, the one whose
// context ends gets its context's error; the pull goes on for the other.
func TestCallerLeavesSharedPull(t *testing.T) {
	reg := newRegistry(t)
	layer := layerOf(t, file("disk/disk.img", diskBytes(14, 1<<20)))
	ref, d := reg.push(t, "disks/shared-slow:1", imageOf(t, layer))
	ld := must(t)(layer.Digest()).String()
	inBlob, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	reg.setIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+ld) {
			once.Do(func() { close(inBlob) })
			<-release
		}
		return false
	})
	s := newStore(t, Config{})
	stays := make(chan error)
	go func() {
		_, err := s.Resolve(context.Background(), Request{Reference: ref})
		stays <- err
	}()
	<-inBlob
	ctx, cancel := context.WithCancel(context.Background())
	leaves := make(chan error)
	go func() {
		_, err := s.Resolve(ctx, Request{Reference: ref})
		leaves <- err
	}()
	cancel()
	if err := <-leaves; !errors.Is(err, context.Canceled) || !errors.Is(err, ErrUnavailable) {
		t.Errorf("the caller that left: %v, want its context's error", err)
	}
	close(release)
	if err := <-stays; err != nil {
		t.Fatalf("the caller that stayed: %v", err)
	}
	if n := reg.blobGets.Load(); n != 2 {
		t.Errorf("%d blob GETs, want 2 (one pull)", n)
	}
	if img, err := s.Resolve(context.Background(), Request{Reference: ref, PullPolicy: k8sv1.PullNever}); err != nil || img.Digest != d.String() {
		t.Errorf("after: %v, %v", img, err)
	}
}
