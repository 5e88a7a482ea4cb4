package launcher

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/imagestore"
)

// imageUse is one image a VMI runs from, as its domain's marks record it:
// the field that names it, the reference as written and the digest it
// resolved to when the domain was first defined. A VMI keeps its digests
// for its whole life: a tag that moves later does not change the disk
// under a running guest, and Prune keeps every digest a domain records.
type imageUse struct {
	Field  string `xml:"field,attr"`
	Volume string `xml:"volume,attr,omitempty"` // a containerDisk's volume
	Ref    string `xml:"ref,attr"`
	Digest string `xml:"digest,attr"`
}

// imageRequest is one image a VMI names.
type imageRequest struct {
	field      *field.Path // the image field
	volume     string      // a containerDisk's volume name
	ref        string
	policy     k8sv1.PullPolicy
	secret     string      // imagePullSecret
	secretFP   *field.Path // its field
	diskPath   string      // a containerDisk's path
	kernelBoot bool
}

// imageRequests lists the images v names: each containerDisk volume's and
// the kernel-boot container's.
func imageRequests(v *v1.VirtualMachineInstance) []imageRequest {
	var out []imageRequest
	for i, vol := range v.Spec.Volumes {
		cd := vol.ContainerDisk
		if cd == nil {
			continue
		}
		fp := field.NewPath("spec", "volumes").Index(i).Child("containerDisk")
		out = append(out, imageRequest{field: fp.Child("image"), volume: vol.Name, ref: cd.Image, policy: cd.ImagePullPolicy,
			secret: cd.ImagePullSecret, secretFP: fp.Child("imagePullSecret"), diskPath: cd.Path})
	}
	if fw := v.Spec.Domain.Firmware; fw != nil && fw.KernelBoot != nil && fw.KernelBoot.Container != nil {
		c := fw.KernelBoot.Container
		fp := field.NewPath("spec", "domain", "firmware", "kernelBoot", "container")
		out = append(out, imageRequest{field: fp.Child("image"), ref: c.Image, policy: c.ImagePullPolicy,
			secret: c.ImagePullSecret, secretFP: fp.Child("imagePullSecret"), kernelBoot: true})
	}
	return out
}

// imageStore returns the launcher's image store, opening it (and making
// its folder) on first use.
func (l *Launcher) imageStore() (*imagestore.Store, error) {
	l.storeMu.Lock()
	defer l.storeMu.Unlock()
	if l.store != nil {
		return l.store, nil
	}
	cfg := l.cfg.Images
	cfg.Root = l.cfg.Layout.ImageStore
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
// v names, and returns where each is on the host, for the converter, with
// the uses to record. An image the domain already recorded keeps its
// digest (pinned).
func (l *Launcher) resolveImages(ctx context.Context, v *v1.VirtualMachineInstance, pinned []imageUse) (map[string]convert.HostImage, []imageUse, error) {
	reqs := imageRequests(v)
	if len(reqs) == 0 {
		return nil, nil, nil
	}
	store, err := l.imageStore()
	if err != nil {
		return nil, nil, &HostError{Err: err}
	}
	images := map[string]convert.HostImage{}
	var uses []imageUse
	var invalid field.ErrorList
	for _, r := range reqs {
		req := imagestore.Request{Reference: r.ref, PullPolicy: r.policy}
		for _, p := range pinned {
			if p.Field == r.field.String() && p.Ref == r.ref && p.Digest != "" {
				req = imagestore.Request{Reference: withDigest(r.ref, p.Digest), PullPolicy: k8sv1.PullIfNotPresent}
			}
		}
		if r.secret != "" {
			auth, ok := l.cfg.ImagePullSecrets[r.secret]
			if !ok {
				invalid = append(invalid, field.Invalid(r.secretFP, r.secret,
					"an imagePullSecret needs a cluster; Config.ImagePullSecrets maps none of that name to credentials"))
				continue
			}
			req.Auth = auth
		}
		began := time.Now()
		img, err := store.Resolve(ctx, req)
		if err != nil {
			if fe := imageFieldError(r.field, r.ref, err); fe != nil {
				invalid = append(invalid, fe)
				continue
			}
			l.releaseImages(uses)
			return nil, nil, &HostError{Err: field.Invalid(r.field, r.ref, err.Error())}
		}
		l.log.Debug("image resolved", "image", r.ref, "digest", img.Digest, "took", time.Since(began))
		hi := images[r.ref]
		hi.Dir = img.Dir
		if !r.kernelBoot && r.diskPath == "" {
			disk, err := img.DiskPath("")
			if err != nil {
				invalid = append(invalid, field.Invalid(r.field, r.ref, err.Error()))
				continue
			}
			hi.Disk = disk
		}
		images[r.ref] = hi
		l.holdImage(img.Digest)
		uses = append(uses, imageUse{Field: r.field.String(), Volume: r.volume, Ref: r.ref, Digest: img.Digest})
	}
	if len(invalid) > 0 {
		l.releaseImages(uses)
		return nil, nil, &InvalidError{Kind: api.KindVMI, Stage: "images", Errors: invalid}
	}
	return images, uses, nil
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
func (l *Launcher) releaseImages(uses []imageUse) {
	l.storeMu.Lock()
	defer l.storeMu.Unlock()
	for _, u := range uses {
		if l.heldImages[u.Digest]--; l.heldImages[u.Digest] <= 0 {
			delete(l.heldImages, u.Digest)
		}
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
}

// volumeStatuses reports the containerDisk volumes of a domain with the
// image digest each runs from: KubeVirt's status.volumeStatus has no field
// for the digest (its containerDiskVolume holds a checksum), so the
// message says "<reference>@<digest>"; Target is the disk's device in the
// guest (vda...).
func volumeStatuses(s snapshot) []v1.VolumeStatus {
	m := s.cur.marks
	if m == nil || len(m.Images) == 0 {
		return nil
	}
	var out []v1.VolumeStatus
	for _, u := range m.Images {
		if u.Volume == "" {
			continue
		}
		vs := v1.VolumeStatus{Name: u.Volume, Message: u.Ref + "@" + u.Digest}
		if d := s.cur.xml.Devices; d != nil {
			for _, disk := range d.Disks {
				if disk.Alias != nil && disk.Alias.Name == convert.UserAliasPrefix+u.Volume && disk.Target != nil {
					vs.Target = disk.Target.Dev
				}
			}
		}
		out = append(out, vs)
	}
	return out
}
