package launcher

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
)

// Live changes: a Sync of a running VMI whose spec changed compares the
// domain as it runs, and the spec its marks record, with the new plan
// (hostplan.LiveChanges), and makes what libvirt changes live — disks and
// NICs hot-plugged, link states, CD-ROM media, vCPUs, virtio-mem sizes —
// in the running domain and in its persistent definition at once. Then it
// records the new spec, hash and hot-plugged volumes in the domain's
// marks, so that a restarted launcher compares with what runs. A change
// that needs a restart, or that this host's libvirt cannot make, makes
// none of them: Sync returns a *RestartRequiredError. A launcher that dies
// between an attach and the marks finds the device there: the next Sync
// attaches nothing twice (devices are matched by their aliases).

// ErrRestartRequired: the VMI's spec changed in a way a running domain
// cannot follow; the domain is left as it runs. The error is a
// *RestartRequiredError naming the fields. Permanent for this spec: it
// takes effect when the VMI is started again.
var ErrRestartRequired = errors.New("launcher: the change needs a restart of the VMI")

// RestartRequiredError lists the changes of a running VMI's spec that
// only a restart applies (Restart), or that this host's libvirt cannot
// make at all (HostLacks), at their field paths; Live are the changes
// that could have been made live, and were not.
type RestartRequiredError struct {
	VMI       string
	Restart   field.ErrorList
	HostLacks field.ErrorList
	Live      []hostplan.LiveOp
}

// Error lists the fields.
func (e *RestartRequiredError) Error() string {
	var paths []string
	for _, fe := range append(append(field.ErrorList{}, e.Restart...), e.HostLacks...) {
		paths = append(paths, fe.Field)
	}
	return fmt.Sprintf("launcher: %s runs, and changes of %s need a restart", e.VMI, strings.Join(paths, ", "))
}

// Is makes the error ErrRestartRequired.
func (e *RestartRequiredError) Is(target error) bool { return target == ErrRestartRequired }

// LiveChanges compares the running domain of vmi with the plan of vmi's
// spec, and writes nothing: the live operations Sync would make, and the
// changes that need a restart. A VMI whose domain does not run, or whose
// marks record no spec, has no live changes (nil).
func (l *Launcher) LiveChanges(ctx context.Context, vmi *v1.VirtualMachineInstance) (*hostplan.Live, error) {
	plan, err := l.plan(ctx, vmi)
	if err != nil {
		return nil, err
	}
	defer l.releaseImages(plan.Marks.Images)
	var live *hostplan.Live
	err = l.read(ctx, func(c *libvirt.Connect) error {
		dom, err := c.LookupDomainByName(plan.Domain.Name)
		if isNoDomain(err) {
			return nil
		}
		if err != nil {
			return wrapErr(err, "look up domain %s", plan.Domain.Name)
		}
		defer dom.Free()
		live, err = l.liveChanges(ctx, dom, plan)
		return err
	})
	return live, err
}

// liveChanges reads the running domain dom and compares it with plan; nil
// when it does not run or records no spec.
func (l *Launcher) liveChanges(ctx context.Context, dom *libvirt.Domain, plan *Plan) (*hostplan.Live, error) {
	cur, err := readDomain(dom, plan.Domain.Name, true)
	if err != nil || !cur.exists || !cur.state.Active() || cur.marks == nil {
		return nil, err
	}
	was, err := cur.marks.SpecOf()
	if err != nil || was == nil {
		return nil, err
	}
	f, err := l.hostFacts(ctx)
	if err != nil {
		return nil, err
	}
	host, err := l.host(f)
	if err != nil {
		return nil, err
	}
	return hostplan.LiveChanges(cur.xml, was, plan, &host.Options.HostFacts)
}

// applyLive makes the live changes of plan in st's running domain, whose
// marks record another hash, and records the new plan in its marks —
// also when there is nothing to change (the domain already is as planned:
// a launcher died before recording it; or only the host's side of the
// plan changed): a running domain is not defined again. done is false
// when there is nothing to compare (no spec recorded): the caller goes on
// as before.
func (l *Launcher) applyLive(ctx context.Context, st *vmiState, plan *Plan, marks *hostplan.Marks) (done bool, err error) {
	err = l.onDomain(ctx, st.name, func(dom *libvirt.Domain) error {
		live, err := l.liveChanges(ctx, dom, plan)
		if err != nil || live == nil {
			return err
		}
		done = true
		if !live.Applicable() {
			return &RestartRequiredError{VMI: st.key(), Restart: live.Restart, HostLacks: live.HostLacks, Live: live.Ops}
		}
		for _, op := range live.Ops {
			began := time.Now()
			if err := liveOp(dom, op); err != nil {
				// What was made stays: the next Sync compares with it.
				return &HostError{VMI: st.key(), Err: wrapErr(err, "%s", op)}
			}
			l.log.Info("live change made", "vmi", st.key(), "change", op.String(), "took", time.Since(began))
		}
		m := plan.Marks.WithRun(marks)
		m.Hotplugged = hotplugged(marks.Hotplugged, live.Hotplugged, plan.VMI)
		return wrapErr(writeMarks(dom, &m, true), "record the live changes of domain %s", st.name)
	})
	if done {
		l.refresh(ctx, st, time.Time{})
	}
	return done, err
}

// liveAffect is where a live change is made: in the running domain and in
// its persistent definition, so that it stays.
const liveAffect = libvirt.DOMAIN_DEVICE_MODIFY_LIVE | libvirt.DOMAIN_DEVICE_MODIFY_CONFIG

// liveOp makes one live operation on dom.
func liveOp(dom *libvirt.Domain, op hostplan.LiveOp) error {
	switch op.Kind {
	case hostplan.AttachDisk, hostplan.AttachInterface:
		return dom.AttachDeviceFlags(op.Device, liveAffect)
	case hostplan.DetachDisk, hostplan.DetachInterface:
		return dom.DetachDeviceFlags(op.Device, liveAffect)
	case hostplan.SetLink, hostplan.ChangeMedia, hostplan.ResizeMemory:
		return dom.UpdateDeviceFlags(op.Device, liveAffect)
	case hostplan.SetVCPUs:
		return dom.SetVcpusFlags(op.VCPUs, libvirt.DOMAIN_VCPU_LIVE|libvirt.DOMAIN_VCPU_CONFIG)
	}
	return fmt.Errorf("launcher: unknown live operation %q", op.Kind)
}

// hotplugged lists the volumes of v attached while it runs: those recorded
// before that v still has, and those just attached.
func hotplugged(before, now []string, v *v1.VirtualMachineInstance) []string {
	var out []string
	for _, vol := range v.Spec.Volumes {
		if slices.Contains(before, vol.Name) || slices.Contains(now, vol.Name) {
			out = append(out, vol.Name)
		}
	}
	return out
}

// liveReady tells whether a domain found by Sync runs, confirmed, from a
// recorded spec, and its plan changed: then the change is made live.
func liveReady(cur currentDomain, m hostplan.Marks) bool {
	return cur.exists && cur.state.Active() && cur.marks != nil && cur.marks.Spec != "" && cur.marks.Hash != m.Hash &&
		cur.marks.Started != nil && !cur.marks.Started.Pending
}
