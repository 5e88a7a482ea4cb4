package hostplan

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

// Plan is the complete plan of one VMI on one host, as data: the exact
// domain the launcher defines, with the marks its metadata records, and
// every artifact it makes or checks before, in order. Applying it is the
// launcher's; making it reads nothing of the host (Make).
type Plan struct {
	// VMI is the defaulted VMI the plan is for.
	VMI *v1.VirtualMachineInstance
	// Domain is the domain to define, its Metadata holding Marks, and
	// XML its canonical XML (domain.Marshal's bytes): exactly what the
	// launcher defines for a VMI that has not run yet (a domain that ran
	// keeps its run marks: Marks.WithRun).
	Domain *libvirtxml.Domain
	XML    []byte
	// Hash is the SHA-256 of the domain's canonical XML without its
	// metadata (Marks.Hash too): the launcher defines a domain again only
	// when it changes.
	Hash string
	// Marks are what the domain's metadata records of the plan: owner, VMI,
	// hash and images. They hold no run marks.
	Marks Marks
	// StateFolder is the VMI's folder on the host.
	StateFolder string
	// QEMU is the user QEMU runs as (Host.QEMU): the folders it opens files
	// in must let it walk in.
	QEMU *User
	// Artifacts are the folders and files the plan makes or checks, in
	// the order it does.
	Artifacts []Artifact
}

// Make computes the plan of the VMI req admitted on host, from what the
// launcher gathered for it (in): it converts the VMI (pipeline.Convert,
// with the images in the layout), checks its socket paths, plans its
// artifacts with their contents, and marshals the domain once, with the
// marks in its metadata. It reads nothing of the host: the same request,
// host and inputs give the same plan, byte for byte.
//
// Errors: an *InvalidError (pipeline.ErrInvalid) listing every field error
// of a VMI the converter or the plan refuses; an error that is ErrNotReady
// (with the field) for what the host lacks; any other error is the
// caller's (a Host without a HostLayout).
func Make(req *Request, host Host, in Inputs) (*Plan, error) {
	if req == nil || req.VMI == nil {
		return nil, errors.New("hostplan: Make of a nil request")
	}
	layout, err := host.layout()
	if err != nil {
		return nil, err
	}
	v := req.VMI
	uses := imageUses(req, in)
	layout.Images = hostImages(req, in, layout.Images)
	opts := host.Options
	opts.Layout = layout
	d, err := convertVMI(v, pipeline.Config{Cluster: host.Cluster, Options: opts})
	if err != nil {
		return nil, err
	}
	if errs := socketPathErrors(d, v.Name); len(errs) > 0 {
		return nil, &pipeline.InvalidError{Kind: api.KindVMI, Stage: "artifacts", Errors: errs}
	}
	reserveRootPorts(d, v)
	pl := &planner{vmi: v, layout: layout, in: in, qemu: host.QEMU, folders: map[string]bool{}}
	if err := pl.artifacts(); err != nil {
		var fe *field.Error
		if errors.As(err, &fe) && !errors.Is(err, ErrNotReady) {
			return nil, &pipeline.InvalidError{Kind: api.KindVMI, Stage: "artifacts", Errors: field.ErrorList{fe}}
		}
		return nil, err
	}

	d.Metadata = nil
	bare, err := marshal(d)
	if err != nil {
		return nil, fmt.Errorf("hostplan: marshal domain %s: %w", d.Name, err)
	}
	sum := sha256.Sum256(bare)
	p := &Plan{VMI: v, Domain: d, Hash: hex.EncodeToString(sum[:]), StateFolder: pl.state, QEMU: host.QEMU, Artifacts: pl.items}
	p.Marks = Marks{
		Owner:  host.Owner,
		VMI:    VMIRef{Namespace: vmiNamespace(v), Name: v.Name, UID: v.UID, Grace: int64(GracePeriod(v) / time.Second)},
		Hash:   p.Hash,
		Images: uses,
		// Hot-pluggable volumes in the spec from the start are hotplug
		// volumes all the same (KubeVirt attaches them through an
		// attachment pod and reports them so).
		Hotplugged: hotpluggableDisks(v),
	}
	if p.Marks.Spec, err = SpecMark(v); err != nil {
		return nil, err
	}
	el, err := p.Marks.Element()
	if err != nil {
		return nil, err
	}
	if p.XML, err = domain.WithMetadata(bare, el); err != nil {
		return nil, err
	}
	d.Metadata = &libvirtxml.DomainMetadata{XML: el}
	return p, nil
}

// hotpluggableDisks are the names of v's hot-pluggable volumes that a disk
// of the spec uses, in the spec's order.
func hotpluggableDisks(v *v1.VirtualMachineInstance) []string {
	var out []string
	for i := range v.Spec.Volumes {
		vol := &v.Spec.Volumes[i]
		if convert.Hotpluggable(vol) && specHasDisk(&v.Spec, vol.Name) {
			out = append(out, vol.Name)
		}
	}
	return out
}

// The pipeline's stages Make runs, once each: variables so that a test can
// count them.
var (
	convertVMI = pipeline.Convert
	marshal    = domain.Marshal
)

// XMLWith returns the plan's domain XML with marks m in its metadata in
// place of the plan's: what the launcher defines for a domain that has run
// (m is the plan's marks with the run's).
func (p *Plan) XMLWith(m Marks) ([]byte, error) {
	el, err := m.Element()
	if err != nil {
		return nil, err
	}
	return domain.WithMetadata(p.XML, el)
}

// hostImages returns the layout's Images with the images the launcher
// resolved for req, by the reference each field names.
func hostImages(req *Request, in Inputs, base map[string]convert.HostImage) map[string]convert.HostImage {
	if len(in.Images) == 0 {
		return base
	}
	images := make(map[string]convert.HostImage, len(base)+len(req.Images))
	for ref, img := range base {
		images[ref] = img
	}
	for _, r := range req.Images {
		img, ok := in.Images[r.Field.String()]
		if !ok {
			continue
		}
		hi := images[r.Reference]
		hi.Dir = img.Dir
		if !r.KernelBoot && r.DiskPath == "" {
			hi.Disk = img.Disk
		}
		images[r.Reference] = hi
	}
	return images
}

// imageUses lists the images of req the launcher resolved, as the marks
// record them.
func imageUses(req *Request, in Inputs) []ImageUse {
	var uses []ImageUse
	for _, r := range req.Images {
		if img, ok := in.Images[r.Field.String()]; ok && img.Digest != "" {
			uses = append(uses, ImageUse{Field: r.Field.String(), Volume: r.Volume, Ref: r.Reference, Digest: img.Digest})
		}
	}
	return uses
}

// GracePeriod returns the VMI's termination grace period
// (spec.terminationGracePeriodSeconds, KubeVirt's default when unset).
func GracePeriod(v *v1.VirtualMachineInstance) time.Duration {
	if t := v.Spec.TerminationGracePeriodSeconds; t != nil {
		return time.Duration(*t) * time.Second
	}
	return time.Duration(v1.DefaultGracePeriodSeconds) * time.Second
}

// vmiNamespace is the VMI's namespace, "default" when it has none.
func vmiNamespace(v *v1.VirtualMachineInstance) string {
	if v.Namespace == "" {
		return "default"
	}
	return v.Namespace
}
