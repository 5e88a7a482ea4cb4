package launcher

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
	"github.com/vmi2libvirt/vmi2libvirt/internal/hostfiles"
	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

// Plan is what Sync does on this host for one VMI, computed before
// anything is written (package hostplan): the domain it defines, with its
// marks, and the artifacts it makes.
type Plan = hostplan.Plan

// Artifact is one host file or folder of a Plan.
type Artifact = hostplan.Artifact

// Plan computes what Sync would do for vmi on this host and writes nothing
// of the VMI's: the launcher gathers what the plan needs — the host's
// facts (probed once per connection), the VMI's containerDisk and
// kernel-boot images, resolved in the image store and pulled as their pull
// policies say (the store is a cache shared by all VMIs; a VMI keeps the
// digests its domain recorded), the files of its config sources — and
// hostplan.Make computes the domain and the artifacts from them. A dry run.
//
// Errors: an *InvalidError (ErrInvalid) for a VMI that validation, the
// converter, its images (a bad reference, no linux/amd64 image, no disk
// where KubeVirt looks, an unmapped imagePullSecret) or the plan refuse,
// listing every field error; a *HostError (ErrHostNotReady) for what the
// host lacks (a registry that cannot be reached or lacks the image, a
// config source's folder); ErrUnavailable while libvirt cannot be reached.
func (l *Launcher) Plan(ctx context.Context, vmi *v1.VirtualMachineInstance) (*Plan, error) {
	p, err := l.plan(ctx, vmi)
	if p != nil {
		l.releaseImages(p.Marks.Images)
	}
	return p, err
}

// plan is Plan, keeping the images it resolved from PruneImages until the
// caller releases them (releaseImages of the plan's marks' images). It
// counts in plans.
func (l *Launcher) plan(ctx context.Context, vmi *v1.VirtualMachineInstance) (*Plan, error) {
	return l.planPinned(ctx, vmi, nil)
}

// planPinned is plan with the images pinned to the digests of pinned when
// it is not nil (a migration's target: the source's digests), else to
// those the VMI's domain recorded.
func (l *Launcher) planPinned(ctx context.Context, vmi *v1.VirtualMachineInstance, pinned []hostplan.ImageUse) (_ *Plan, err error) {
	if vmi == nil {
		return nil, errors.New("launcher: Plan of a nil VMI")
	}
	l.plans.Add(1)
	key := vmiKey(vmi)
	facts, err := l.hostFacts(ctx)
	if err != nil {
		return nil, err
	}
	host, err := l.host(facts)
	if err != nil {
		return nil, withVMI(err, key)
	}
	if l.cfg.ClaimsOf != nil {
		layout := l.cfg.Layout
		layout.Claims = l.cfg.ClaimsOf(vmi)
		host.Options.Layout = layout
	}
	req, err := hostplan.Prepare(vmi, host)
	if err != nil {
		return nil, err
	}
	var in hostplan.Inputs
	if len(req.Images) > 0 {
		// Keep the digests the VMI's domain recorded.
		if pinned == nil {
			cur, err := l.current(ctx, convert.DomainName(req.VMI))
			if err != nil {
				return nil, err
			}
			if cur.exists && cur.marks != nil && cur.marks.Owner == l.cfg.Owner && cur.marks.VMI.UID == req.VMI.UID {
				pinned = cur.marks.Images
			}
		}
		if in.Images, err = l.resolveImages(ctx, req, pinned); err != nil {
			return nil, withVMI(err, key)
		}
		defer func() {
			if err != nil {
				l.releaseResolved(in.Images)
			}
		}()
	}
	if in.Sources, err = hostfiles.ReadSources(req.Sources, l.cfg.Sources.folders()); err != nil {
		return nil, hostErr(err, key)
	}
	p, err := hostplan.Make(req, host, in)
	if err != nil {
		return nil, hostErr(err, key)
	}
	return p, nil
}

// hostErr classes an error of the plan or its artifacts for the VMI
// called key: a refusal stays an *InvalidError, a field error alone (what
// the VMI asks that the host cannot make) becomes one, and what the host
// lacks or fails at is a *HostError.
func hostErr(err error, key string) error {
	var fe *field.Error
	switch {
	case errors.Is(err, pipeline.ErrInvalid), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case !errors.Is(err, hostplan.ErrNotReady) && errors.As(err, &fe):
		return &InvalidError{Kind: api.KindVMI, Stage: "artifacts", Errors: field.ErrorList{fe}}
	}
	var he *HostError
	if errors.As(err, &he) {
		return withVMI(err, key)
	}
	return &HostError{VMI: key, Err: err}
}
