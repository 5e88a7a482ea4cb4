package imagestore

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	k8sv1 "k8s.io/api/core/v1"
)

// Defaults of Config.
const (
	// DefaultMaxImageSize bounds the bytes of files one image extracts to.
	DefaultMaxImageSize = 64 << 30
	// DefaultProgressInterval is how often a pull in progress is reported.
	DefaultProgressInterval = 2 * time.Second
)

// Modes of the store's files and folders: QEMU, another user, reads
// images.
const (
	fileMode   = 0o644
	folderMode = 0o755
)

// Config configures a Store. Only Root is required.
type Config struct {
	// Root is the store's folder, absolute (the launcher's is
	// /var/lib/vmi2libvirt/images). It is created if missing.
	Root string
	// Keychain finds credentials for a registry when a Request carries
	// none. Nil means authn.DefaultKeychain: the Docker config
	// ($DOCKER_CONFIG/config.json or ~/.docker/config.json) and its
	// credential helpers.
	Keychain authn.Keychain
	// Transport carries the requests to registries. Nil means
	// remote.DefaultTransport: HTTPS with the system's roots, the
	// environment's proxy. Plain HTTP is refused whatever Transport is,
	// but for the registries below.
	Transport http.RoundTripper
	// PlainHTTPRegistries names registries ("host" for every port, or
	// "host:port") that may be reached over plain HTTP. Loopback
	// registries (localhost, 127.0.0.0/8, [::1]) always may.
	PlainHTTPRegistries []string
	// MaxImageSize bounds the bytes of files an image may extract to
	// (ErrTooLarge beyond); 0 means DefaultMaxImageSize.
	MaxImageSize int64
	// Progress, when set, is told how far each pull from a registry has
	// come: every ProgressInterval while the pull lasts (a pull shorter
	// than that reports nothing), then once when it ends. It is called
	// from another goroutine and must return quickly.
	Progress func(Progress)
	// ProgressInterval is the period of Progress reports; 0 means
	// DefaultProgressInterval.
	ProgressInterval time.Duration
}

// Store is a folder of container images extracted by digest. Its methods
// may be called from many goroutines (and several processes may share a
// Root): one pull serves every caller that asks for the same reference or
// digest at the same time.
//
// Under Root:
//
//	sha256/<hex>/rootfs/      the file system of the image whose manifest digest is sha256:<hex>
//	sha256/<hex>/image.json   what the store knows of it (written before the folder appears)
//	.refs/<hash>.json         which digest a reference resolved to
//	.tmp/                     pulls in progress (each locked while alive), and pruned images being removed
//	.lock                     shared while an image is looked up or published, exclusive while pruning
//
// An image folder appears whole, by rename, or not at all.
type Store struct {
	root      string
	keychain  authn.Keychain
	transport http.RoundTripper
	plainHTTP []string
	maxSize   int64
	progress  func(Progress)
	interval  time.Duration

	pulls    flights[*Image]
	extracts flights[struct{}]
}

// Request names an image to resolve.
type Request struct {
	// Reference is the image reference as a VMI writes it (a containerDisk's
	// image, a kernelBoot container's image): a tag or a digest.
	Reference string
	// PullPolicy is Always, IfNotPresent or Never, as KubeVirt reads a
	// containerDisk's imagePullPolicy. Empty means DefaultPullPolicy.
	PullPolicy k8sv1.PullPolicy
	// Auth, when set, is the credentials for this image (e.g. what the
	// caller mapped an imagePullSecret to), instead of Config.Keychain's.
	Auth authn.Authenticator
}

// New opens (creating it if need be) the store at cfg.Root, and removes
// the temporary folders that pulls cut off earlier left behind.
func New(cfg Config) (*Store, error) {
	if !filepath.IsAbs(cfg.Root) {
		return nil, fmt.Errorf("imagestore: Config.Root %q is not an absolute path", cfg.Root)
	}
	s := &Store{
		root:      filepath.Clean(cfg.Root),
		keychain:  cfg.Keychain,
		transport: cfg.Transport,
		maxSize:   cfg.MaxImageSize,
		progress:  cfg.Progress,
		interval:  cfg.ProgressInterval,
	}
	for _, r := range cfg.PlainHTTPRegistries {
		s.plainHTTP = append(s.plainHTTP, strings.ToLower(r))
	}
	if s.keychain == nil {
		s.keychain = authn.DefaultKeychain
	}
	if s.transport == nil {
		s.transport = remote.DefaultTransport
	}
	if s.maxSize <= 0 {
		s.maxSize = DefaultMaxImageSize
	}
	if s.interval <= 0 {
		s.interval = DefaultProgressInterval
	}
	for _, dir := range []string{s.root, s.path("sha256"), s.path(".refs"), s.path(".tmp")} {
		if err := os.MkdirAll(dir, folderMode); err != nil {
			return nil, fmt.Errorf("imagestore: %w", err)
		}
	}
	// QEMU reaches the images through sha256/, whatever the umask.
	if err := os.Chmod(s.path("sha256"), folderMode); err != nil {
		return nil, fmt.Errorf("imagestore: %w", err)
	}
	if err := s.cleanTemps(); err != nil {
		return nil, fmt.Errorf("imagestore: %w", err)
	}
	return s, nil
}

// DefaultPullPolicy is the pull policy of an image whose policy is unset,
// as Kubernetes defaults a container's: Always when the reference's tag is
// latest or it has neither tag nor digest, IfNotPresent otherwise.
func DefaultPullPolicy(reference string) k8sv1.PullPolicy {
	ref, err := name.ParseReference(reference)
	if err != nil {
		return k8sv1.PullAlways
	}
	if t, ok := ref.(name.Tag); ok && t.TagStr() == name.DefaultTag {
		return k8sv1.PullAlways
	}
	return k8sv1.PullIfNotPresent
}

// Resolve returns the image a reference names, pulling it for linux/amd64
// as the pull policy says: IfNotPresent uses the store's copy when it has
// one, Always asks the registry which digest the reference names now (and
// pulls only when the store lacks that digest), Never never asks the
// registry. Callers resolving the same reference with the same policy at
// the same time share one pull (made with the first caller's
// credentials), and callers needing the same digest share one extraction.
// Errors are *Error values (see the Err* conditions).
func (s *Store) Resolve(ctx context.Context, req Request) (*Image, error) {
	ref, err := s.parseReference(req.Reference)
	if err != nil {
		return nil, err
	}
	policy := req.PullPolicy
	if policy == "" {
		policy = DefaultPullPolicy(req.Reference)
	}
	switch policy {
	case k8sv1.PullAlways:
	case k8sv1.PullIfNotPresent, k8sv1.PullNever:
		img, err := s.lookup(req.Reference, ref)
		if err != nil || img != nil {
			return img, err
		}
		if policy == k8sv1.PullNever {
			return nil, failure(req.Reference, ErrNotPresent, "", nil)
		}
	default:
		return nil, failure(req.Reference, ErrBadPullPolicy, fmt.Sprintf("%q: want Always, IfNotPresent or Never", policy), nil)
	}
	img, err := s.pulls.do(ctx, string(policy)+" "+ref.Name(), func(ctx context.Context) (*Image, error) {
		return s.pull(ctx, req.Reference, ref, req.Auth)
	})
	if err != nil {
		return nil, asError(req.Reference, err)
	}
	out := *img
	out.Reference = req.Reference
	return &out, nil
}

// pull resolves a reference at its registry and installs its linux/amd64
// image.
func (s *Store) pull(ctx context.Context, raw string, ref name.Reference, auth authn.Authenticator) (*Image, error) {
	opts, guard := s.remoteOptions(ctx, auth)
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		return nil, failure(raw, registryKind(err, guard), "", err)
	}
	var img v1.Image
	switch {
	case desc.MediaType.IsIndex():
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, failure(raw, registryKind(err, guard), "", err)
		}
		if img, err = platformImage(idx); err != nil {
			return nil, platformFailure(raw, err, guard)
		}
	case desc.MediaType.IsImage():
		if img, err = desc.Image(); err != nil {
			return nil, failure(raw, registryKind(err, guard), "", err)
		}
	default:
		return nil, failure(raw, ErrBadImage, fmt.Sprintf("manifest of media type %q is not a container image", desc.MediaType), nil)
	}
	return s.install(ctx, raw, ref.Name(), img, source{kind: "registry", compressed: true, guard: guard})
}

// platformFailure sorts the error of picking an index's linux/amd64 image.
func platformFailure(raw string, err error, guard *plainHTTPGuard) error {
	var pe *platformError
	if errors.As(err, &pe) {
		return failure(raw, ErrWrongPlatform, pe.Error(), nil)
	}
	return failure(raw, registryKind(err, guard), "", err)
}

// asError makes any error of the store's an *Error about image (nil stays
// nil): the end of the caller's context is ErrUnavailable, any other error
// that is not an *Error already is ErrStorage.
func asError(image string, err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return failure(image, ErrUnavailable, "", err)
	}
	return failure(image, ErrStorage, "", err)
}

// path returns a path under the store's root.
func (s *Store) path(elem ...string) string {
	return filepath.Join(append([]string{s.root}, elem...)...)
}

// imageFolder returns the folder of the image with manifest digest d.
func (s *Store) imageFolder(d v1.Hash) string {
	return s.path("sha256", d.Hex)
}
