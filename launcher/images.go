package launcher

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
	"github.com/vmi2libvirt/vmi2libvirt/imagestore"
	"github.com/vmi2libvirt/vmi2libvirt/internal/hostfiles"
)

// imageStore returns the launcher's image store, opening it (and making
// its folder) on first use.
func (l *Launcher) imageStore() (*imagestore.Store, error) {
	l.storeMu.Lock()
	defer l.storeMu.Unlock()
	if l.store != nil {
		return l.store, nil
	}
	cfg := l.cfg.Images
	cfg.Root = l.cfg.Layout.ImageStore // Config.check: the same folder, or empty
	if cfg.Progress == nil {
		cfg.Progress = func(p imagestore.Progress) {
			l.log.Info("pulling image", "image", p.Image, "digest", p.Digest, "done", p.Done, "total", p.Total, "finished", p.Finished)
		}
	}
	s, err := imagestore.New(cfg)
	if err != nil {
		return nil, err
	}
	l.store = s
	return s, nil
}

// resolveImages resolves (pulling as their pull policies say) every image
// req names, and returns where each is on the host, by field, holding each
// digest from PruneImages until it is released. An image the domain
// already recorded keeps its digest (pinned). The format of each
// containerDisk's disk is probed once per digest.
func (l *Launcher) resolveImages(ctx context.Context, req *hostplan.Request, pinned []hostplan.ImageUse) (map[string]hostplan.Image, error) {
	store, err := l.imageStore()
	if err != nil {
		return nil, &HostError{Err: err}
	}
	images := make(map[string]hostplan.Image, len(req.Images))
	var invalid field.ErrorList
	fail := func(err error) (map[string]hostplan.Image, error) {
		l.releaseResolved(images)
		return nil, err
	}
	for _, r := range req.Images {
		sreq := imagestore.Request{Reference: r.Reference, PullPolicy: r.PullPolicy}
		for _, p := range pinned {
			if p.Field == r.Field.String() && p.Ref == r.Reference && p.Digest != "" {
				sreq = imagestore.Request{Reference: withDigest(r.Reference, p.Digest), PullPolicy: k8sv1.PullIfNotPresent}
			}
		}
		if r.PullSecret != "" {
			auth, ok := l.cfg.ImagePullSecrets[r.PullSecret]
			if !ok {
				invalid = append(invalid, field.Invalid(r.SecretField, r.PullSecret,
					"an imagePullSecret needs a cluster; Config.ImagePullSecrets maps none of that name to credentials"))
				continue
			}
			sreq.Auth = auth
		}
		began := time.Now()
		img, err := store.Resolve(ctx, sreq)
		if err != nil {
			if fe := imageFieldError(r.Field, r.Reference, err); fe != nil {
				invalid = append(invalid, fe)
				continue
			}
			return fail(&HostError{Err: field.Invalid(r.Field, r.Reference, err.Error())})
		}
		l.log.Debug("image resolved", "image", r.Reference, "digest", img.Digest, "took", time.Since(began))
		hi := hostplan.Image{Reference: r.Reference, Digest: img.Digest, Dir: img.Dir}
		if !r.KernelBoot && r.DiskPath == "" {
			if hi.Disk, err = img.DiskPath(""); err != nil {
				invalid = append(invalid, field.Invalid(r.Field, r.Reference, err.Error()))
				continue
			}
			if hi.DiskFormat, err = l.diskFormat(ctx, img.Digest, filepath.Join(img.Dir, hi.Disk)); err != nil {
				invalid = append(invalid, field.Invalid(r.Field, r.Reference, err.Error()))
				continue
			}
		}
		l.holdImage(img.Digest)
		images[r.Field.String()] = hi
	}
	if len(invalid) > 0 {
		return fail(&InvalidError{Kind: api.KindVMI, Stage: "images", Errors: invalid})
	}
	return images, nil
}

// diskFormat returns the format of the disk at path of the image of
// digest, probing it the first time (an image's content never changes).
func (l *Launcher) diskFormat(ctx context.Context, digest, path string) (string, error) {
	l.storeMu.Lock()
	format, ok := l.diskFormats[digest+path]
	l.storeMu.Unlock()
	if ok {
		return format, nil
	}
	format, err := hostfiles.DiskFormat(ctx, path)
	if err != nil {
		return "", err
	}
	l.storeMu.Lock()
	if l.diskFormats == nil {
		l.diskFormats = map[string]string{}
	}
	l.diskFormats[digest+path] = format
	l.storeMu.Unlock()
	return format, nil
}

// imageFieldError returns the field error of an image that cannot be used
// as it is (a bad reference, no linux/amd64 image, not a valid image, too
// large, no disk where KubeVirt looks), or nil for a failure that may pass
// (registry unreachable, image not found or not yet pushed, credentials
// refused, pull policy Never before an import): the host is not ready.
func imageFieldError(fp *field.Path, ref string, err error) *field.Error {
	for _, permanent := range []error{imagestore.ErrBadReference, imagestore.ErrBadPullPolicy, imagestore.ErrWrongPlatform,
		imagestore.ErrBadImage, imagestore.ErrTooLarge, imagestore.ErrNoDisk, imagestore.ErrNoFile} {
		if errors.Is(err, permanent) {
			return field.Invalid(fp, ref, err.Error())
		}
	}
	return nil
}

// withDigest names the digest of the repository of ref.
func withDigest(ref, digest string) string {
	r, err := name.ParseReference(ref)
	if err != nil {
		return ref
	}
	return r.Context().Digest(digest).String()
}

// holdImage keeps digest from PruneImages until releaseImages: a Sync is
// between its pull and the definition of the domain that records it.
func (l *Launcher) holdImage(digest string) {
	l.storeMu.Lock()
	defer l.storeMu.Unlock()
	if l.heldImages == nil {
		l.heldImages = map[string]int{}
	}
	l.heldImages[digest]++
}

// releaseImages lets PruneImages have the digests of uses again.
func (l *Launcher) releaseImages(uses []hostplan.ImageUse) {
	for _, u := range uses {
		l.release(u.Digest)
	}
}

// releaseResolved lets PruneImages have the digests of images again.
func (l *Launcher) releaseResolved(images map[string]hostplan.Image) {
	for _, img := range images {
		l.release(img.Digest)
	}
}

// release lets PruneImages have digest again (once per holdImage).
func (l *Launcher) release(digest string) {
	l.storeMu.Lock()
	defer l.storeMu.Unlock()
	if l.heldImages[digest]--; l.heldImages[digest] <= 0 {
		delete(l.heldImages, digest)
	}
}

// PruneImages removes from the image store every image no domain on this
// libvirtd records (whoever owns it: launchers of several owners may share
// a store), except those a Sync of this launcher has resolved and is about
// to define a domain with. It returns the digests removed.
func (l *Launcher) PruneImages(ctx context.Context) ([]string, error) {
	all, err := l.allMarks(ctx)
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	for _, m := range all {
		for _, u := range m.Images {
			keep[u.Digest] = true
		}
	}
	store, err := l.imageStore()
	if err != nil {
		return nil, &HostError{Err: err}
	}
	l.storeMu.Lock()
	for d := range l.heldImages {
		keep[d] = true
	}
	l.storeMu.Unlock()
	removed, err := store.Prune(ctx, func(digest string) bool { return keep[digest] })
	if err != nil {
		return removed, &HostError{Err: fmt.Errorf("prune the image store: %w", err)}
	}
	if len(removed) > 0 {
		l.log.Info("images pruned", "removed", strings.Join(removed, " "))
	}
	return removed, nil
}

// storeState is the launcher's image store, opened on first use.
type storeState struct {
	storeMu    sync.Mutex
	store      *imagestore.Store
	heldImages map[string]int // digests resolved by Syncs under way (holdImage)
	// diskFormats are the formats of images' disks, by digest and path.
	diskFormats map[string]string
}
