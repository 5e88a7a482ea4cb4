package main

import (
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	gcrv1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// soakRegistry is the soak's OCI registry on loopback (go-containerregistry's,
// in memory), serving the test guest's kernel-boot image under a tag per
// object. The agents pull from its gated address, which a fault makes stop
// answering: a request then waits, unanswered, until the outage ends, and
// its connection is cut. The soak tags images through a second address
// that always answers.
type soakRegistry struct {
	host  string // the agents': gated
	admin string // the soak's own
	image gcrv1.Image

	mu   sync.Mutex
	down chan struct{} // while it does not answer; closed when it does again
	// unanswered counts the requests an outage left without an answer.
	unanswered atomic.Int64
}

func newSoakRegistry(t *testing.T) *soakRegistry {
	img, err := testguest.Image(testguest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := &soakRegistry{image: img}
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	gated := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		down := r.down
		r.mu.Unlock()
		if down != nil {
			r.unanswered.Add(1)
			select {
			case <-down:
			case <-req.Context().Done():
			}
			panic(http.ErrAbortHandler)
		}
		h.ServeHTTP(w, req)
	}))
	admin := httptest.NewServer(h)
	t.Cleanup(func() {
		r.stop(false)
		gated.Close()
		admin.Close()
	})
	r.host, r.admin = hostOf(gated.URL), hostOf(admin.URL)
	return r
}

func hostOf(raw string) string {
	u, _ := url.Parse(raw)
	return u.Host
}

// ref tags the test guest's image for the object called obj and returns
// the reference the agents pull it by.
func (r *soakRegistry) ref(ctx context.Context, obj string) (string, error) {
	tag, err := name.NewTag(r.admin + "/soak/testguest:" + obj)
	if err != nil {
		return "", err
	}
	if err := remote.Write(tag, r.image, remote.WithContext(ctx)); err != nil {
		return "", err
	}
	return r.host + "/soak/testguest:" + obj, nil
}

// stop makes the registry stop answering (down) or answer again.
func (r *soakRegistry) stop(down bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case down && r.down == nil:
		r.down = make(chan struct{})
	case !down && r.down != nil:
		close(r.down)
		r.down = nil
	}
}
