package launcher

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

// Plan is what Sync does on this host for one VMI, computed before
// anything is written: the domain it defines and the artifacts it makes.
// A VMI refused while planning leaves nothing behind; a dry run is a Plan.
type Plan struct {
	// VMI is the defaulted VMI the plan is for.
	VMI *v1.VirtualMachineInstance
	// Domain is the domain Sync defines, with the launcher's metadata, and
	// XML its canonical XML: exactly what Sync defines for a VMI that has
	// not run yet (a domain that ran keeps its marks of having run).
	Domain *libvirtxml.Domain
	XML    []byte
	// Hash identifies the converted domain (SHA-256 of its XML without
	// the launcher's metadata): Sync redefines a domain only when it
	// changes.
	Hash string
	// StateFolder is the VMI's folder on the host.
	StateFolder string
	// Artifacts are the folders and files Sync makes there (or keeps),
	// in order.
	Artifacts []Artifact

	artifacts *artifactPlan
	marks     *marks
}

// Plan computes what Sync would do for vmi on this host — the domain XML,
// converted with the host's facts, and the artifacts with their contents
// and modes — and writes nothing of the VMI's. It reads the host:
// libvirt's capabilities (probed once per connection), the sources of
// config volumes, existing artifacts. Once the VMI is known to be valid,
// it resolves the VMI's containerDisk and kernel-boot images in the image
// store, pulling those the store lacks as their pull policies say (the
// store is a cache shared by all VMIs); a VMI keeps the digests its domain
// recorded.
//
// Errors: an *InvalidError (ErrInvalid) for a VMI that validation, the
// converter, its images (a bad reference, no linux/amd64 image, no disk
// where KubeVirt looks, an unmapped imagePullSecret) or the artifacts
// refuse, listing every field error; a *HostError (ErrHostNotReady) for
// what the host lacks (a registry that cannot be reached or lacks the
// image, a missing folder); ErrUnavailable while libvirt cannot be
// reached.
func (l *Launcher) Plan(ctx context.Context, vmi *v1.VirtualMachineInstance) (*Plan, error) {
	p, err := l.plan(ctx, vmi)
	if p != nil {
		l.releaseImages(p.marks.Images)
	}
	return p, err
}

// plan is Plan, keeping the images it resolved from PruneImages until the
// caller releases them (releaseImages of the plan's marks' images).
func (l *Launcher) plan(ctx context.Context, vmi *v1.VirtualMachineInstance) (_ *Plan, err error) {
	if vmi == nil {
		return nil, errors.New("launcher: Plan of a nil VMI")
	}
	var uses []imageUse
	defer func() {
		if err != nil {
			l.releaseImages(uses)
		}
	}()
	facts, err := l.hostFacts(ctx)
	if err != nil {
		return nil, err
	}
	opts, err := l.options(facts)
	if err != nil {
		return nil, withVMI(err, vmi.Namespace+"/"+vmi.Name)
	}
	cfg := pipeline.Config{Cluster: l.cfg.Cluster, Options: opts}
	r, err := pipeline.FromVMI(vmi, cfg)
	if err != nil {
		return nil, err
	}
	v := r.VMI
	key := v.Namespace + "/" + v.Name
	if len(imageRequests(v)) > 0 {
		// The VMI is valid: resolve its images (pulling them as their
		// policies say), keeping the digests its domain recorded, and
		// convert again with where they are.
		var pinned []imageUse
		if cur, err := l.current(ctx, convert.DomainName(v)); err != nil {
			return nil, err
		} else if cur.exists && cur.marks != nil && cur.marks.Owner == l.cfg.Owner && cur.marks.VMI.UID == v.UID {
			pinned = cur.marks.Images
		}
		images, u, err := l.resolveImages(ctx, v, pinned)
		if err != nil {
			return nil, withVMI(err, key)
		}
		uses = u
		layout := l.cfg.Layout
		layout.Images = images
		cfg.Options.Layout = layout
		if r, err = pipeline.FromVMI(vmi, cfg); err != nil {
			return nil, err
		}
		v = r.VMI
	}
	if errs := socketPathErrors(r.Domain, r.VMI.Name); len(errs) > 0 {
		return nil, &InvalidError{Kind: api.KindVMI, Stage: "artifacts", Errors: errs}
	}
	sum := sha256.Sum256(r.XML)
	p := &Plan{VMI: v, Domain: r.Domain, Hash: hex.EncodeToString(sum[:]), StateFolder: l.cfg.Layout.StateFolder(v)}
	p.marks = &marks{
		Owner:  l.cfg.Owner,
		VMI:    vmiIdentity{Namespace: v.Namespace, Name: v.Name, UID: v.UID, Grace: int64(gracePeriod(v) / time.Second)},
		Hash:   p.Hash,
		Images: uses,
	}
	if p.marks.VMI.Namespace == "" {
		p.marks.VMI.Namespace = "default"
	}
	if err := setMarks(p.Domain, p.marks); err != nil {
		return nil, err
	}
	if p.XML, err = domain.Marshal(p.Domain); err != nil {
		return nil, wrapErr(err, "marshal domain of %s", key)
	}
	arts, err := planArtifacts(ctx, v, cfg.Options.Layout.(convert.HostLayout), l.cfg.Sources)
	if err != nil {
		var he *HostError
		var fe *field.Error
		switch {
		case errors.As(err, &he):
			return nil, withVMI(err, key)
		case errors.As(err, &fe):
			return nil, &InvalidError{Kind: api.KindVMI, Stage: "artifacts", Errors: field.ErrorList{fe}}
		}
		return nil, &HostError{VMI: key, Err: err}
	}
	p.artifacts, p.Artifacts = arts, arts.items
	return p, nil
}

// gracePeriod returns the VMI's termination grace period
// (spec.terminationGracePeriodSeconds, KubeVirt's default when unset).
func gracePeriod(v *v1.VirtualMachineInstance) time.Duration {
	if t := v.Spec.TerminationGracePeriodSeconds; t != nil {
		return time.Duration(*t) * time.Second
	}
	return time.Duration(v1.DefaultGracePeriodSeconds) * time.Second
}
