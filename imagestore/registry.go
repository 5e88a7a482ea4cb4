package imagestore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// userAgent is what the store tells registries it is.
const userAgent = "vmi2libvirt-imagestore"

// parseReference parses an image reference as Docker and KubeVirt read it
// (docker.io and the tag latest by default). A reference to a registry
// that may be reached over plain HTTP is marked so.
func (s *Store) parseReference(raw string) (name.Reference, error) {
	ref, err := name.ParseReference(raw)
	if err != nil {
		return nil, failure(raw, ErrBadReference, "", err)
	}
	if s.plainHTTPAllowed(ref.Context().RegistryStr()) {
		if ref, err = name.ParseReference(raw, name.Insecure); err != nil {
			return nil, failure(raw, ErrBadReference, "", err)
		}
	}
	return ref, nil
}

// plainHTTPAllowed reports whether a registry (host or host:port) may be
// reached over plain HTTP: a loopback one (localhost, 127.0.0.0/8, ::1),
// as Docker allows by default, or one named in Config.PlainHTTPRegistries
// (by host:port or by host alone, for every port). go-containerregistry on
// its own would also try plain HTTP for private-range addresses; the store
// refuses that.
func (s *Store) plainHTTPAllowed(registry string) bool {
	registry = strings.ToLower(registry)
	host := registry
	if h, _, err := net.SplitHostPort(registry); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "localhost" {
		return true
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return true
	}
	return slices.Contains(s.plainHTTP, registry) || slices.Contains(s.plainHTTP, host)
}

// plainHTTPGuard refuses every plain HTTP request to a host that may not
// be reached that way: go-containerregistry falls back to HTTP by itself
// for some registries, and a registry may redirect a blob to any URL.
type plainHTTPGuard struct {
	inner   http.RoundTripper
	allowed func(hostport string) bool
	refused atomic.Bool
}

// RoundTrip implements http.RoundTripper.
func (g *plainHTTPGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" && !g.allowed(req.URL.Host) {
		g.refused.Store(true)
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, fmt.Errorf("%w: %s://%s", ErrPlainHTTP, req.URL.Scheme, req.URL.Host)
	}
	return g.inner.RoundTrip(req)
}

// remoteOptions are the options of one pull: its context, the guarded
// transport, and the request's credentials or the store's keychain.
func (s *Store) remoteOptions(ctx context.Context, auth authn.Authenticator) ([]remote.Option, *plainHTTPGuard) {
	guard := &plainHTTPGuard{inner: s.transport, allowed: s.plainHTTPAllowed}
	opts := []remote.Option{
		remote.WithContext(ctx),
		remote.WithTransport(guard),
		remote.WithUserAgent(userAgent),
		remote.WithPlatform(platform),
	}
	if auth != nil {
		opts = append(opts, remote.WithAuth(auth))
	} else {
		opts = append(opts, remote.WithAuthFromKeychain(s.keychain))
	}
	return opts, guard
}

// registryKind sorts an error of a registry request into the store's
// conditions.
func registryKind(err error, guard *plainHTTPGuard) error {
	var te *transport.Error
	switch {
	case errors.Is(err, ErrPlainHTTP) || (guard != nil && guard.refused.Load()):
		return ErrPlainHTTP
	case errors.As(err, &te):
		for _, d := range te.Errors {
			switch d.Code {
			case transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode, transport.BlobUnknownErrorCode:
				return ErrNotFound
			case transport.UnauthorizedErrorCode, transport.DeniedErrorCode:
				return ErrUnauthorized
			}
		}
		switch te.StatusCode {
		case http.StatusNotFound:
			return ErrNotFound
		case http.StatusUnauthorized, http.StatusForbidden:
			return ErrUnauthorized
		}
		return ErrUnavailable
	case strings.Contains(err.Error(), "does not match requested digest"):
		// go-containerregistry checks a manifest pulled by digest, with an
		// error of no type of its own.
		return ErrDigestMismatch
	}
	return ErrUnavailable
}

// platform is the only platform the store pulls.
var platform = v1.Platform{OS: "linux", Architecture: "amd64"}

// platformImage returns the linux/amd64 image of an index.
func platformImage(idx v1.ImageIndex) (v1.Image, error) {
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var offered []string
	for _, d := range im.Manifests {
		if d.Platform == nil || !d.MediaType.IsImage() {
			continue
		}
		if d.Platform.Satisfies(platform) {
			return idx.Image(d.Digest)
		}
		offered = append(offered, d.Platform.String())
	}
	return nil, &platformError{offered}
}

// platformError is an index without a linux/amd64 image.
type platformError struct{ offered []string }

func (e *platformError) Error() string {
	if len(e.offered) == 0 {
		return "the index names no platform"
	}
	return "the index offers " + strings.Join(e.offered, ", ")
}

// checkPlatform refuses an image whose config names another platform than
// linux/amd64 (a config naming none is taken as it is).
func checkPlatform(cfg *v1.ConfigFile) error {
	if (cfg.OS == "" || cfg.OS == platform.OS) && (cfg.Architecture == "" || cfg.Architecture == platform.Architecture) {
		return nil
	}
	p := v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant}
	return &platformError{[]string{p.String()}}
}
