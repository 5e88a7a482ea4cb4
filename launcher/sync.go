package launcher

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
	"github.com/vmi2libvirt/vmi2libvirt/internal/hostfiles"
)

// Sync makes libvirt run vmi as its spec says. It is idempotent: it plans
// (see Plan: default, validate, convert for this host, artifacts — nothing
// is written for a VMI refused there), makes the VMI's artifacts, defines
// the domain — or leaves a definition from the same converted domain
// alone —, starts it unless it has run before (paused when
// spec.startStrategy is Paused), and resumes a domain paused for a reason
// other than the user. A VMI runs at most once: whether it has run is
// recorded in its domain before it starts, so no launcher, restarted or
// not, starts it again, whatever status the caller passes. A VMI whose
// graceful shutdown is under way is left to end.
//
// The VMI becomes owned by this launcher: its status changes are delivered
// to Watch. A domain of the same name that another owner, or no launcher,
// defined is never changed: Sync returns a *ConflictError (ErrConflict);
// so it does when a domain of an earlier VMI of the same name (another
// UID) still runs — one that has ended is replaced.
//
// Sync returns when ctx ends, even in the middle of a libvirt call; the
// work then stops at its next step. Errors are classed (see ErrInvalid,
// ErrHostNotReady, ErrUnavailable, ErrConflict). A Sync that a Delete of
// the same VMI overtook returns ErrDeleted.
func (l *Launcher) Sync(ctx context.Context, vmi *v1.VirtualMachineInstance) error {
	if vmi == nil {
		return errors.New("launcher: Sync of a nil VMI")
	}
	if l.closed.Load() {
		return ErrClosed
	}
	name := convert.DomainName(vmi)
	deletes := l.deleteCount(name)
	if st := l.lookupState(name); st != nil && l.steady(st, vmi, deletes) {
		return nil // it runs as this VMI's last Sync left it, and nothing changed since
	}
	began := time.Now()
	plan, err := l.plan(ctx, vmi)
	if err != nil {
		return err
	}
	defer l.releaseImages(plan.Marks.Images)
	l.log.Debug("planned", "vmi", plan.Marks.Key(), "artifacts", len(plan.Artifacts), "took", time.Since(began))
	return l.applyPlan(ctx, plan, vmi, deletes)
}

// Apply carries out a plan of this launcher (Plan, or hostplan.Make with
// the launcher's owner and layout), as Sync does after planning: it
// checks and makes the plan's artifacts, defines the plan's domain — or
// leaves a definition of the same converted domain alone — and starts it
// unless it has run before. The images the plan records are held from
// PruneImages while it applies; one pruned since the plan was made fails
// the check of its overlay (ErrHostNotReady: plan again). A plan of
// another owner, or with its state folder elsewhere than Config.Layout's
// StateDir, is refused. Errors are Sync's.
func (l *Launcher) Apply(ctx context.Context, plan *Plan) error {
	if plan == nil || plan.VMI == nil {
		return errors.New("launcher: Apply of a nil plan")
	}
	if l.closed.Load() {
		return ErrClosed
	}
	switch {
	case plan.Marks.Owner != l.cfg.Owner:
		return fmt.Errorf("launcher: a plan of owner %q cannot be applied by the launcher of %q", plan.Marks.Owner, l.cfg.Owner)
	case filepath.Dir(plan.StateFolder) != filepath.Clean(l.cfg.Layout.StateDir):
		return fmt.Errorf("launcher: the plan's state folder %s is not in this launcher's StateDir %s", plan.StateFolder, l.cfg.Layout.StateDir)
	}
	for _, u := range plan.Marks.Images {
		l.holdImage(u.Digest)
	}
	defer l.releaseImages(plan.Marks.Images)
	return l.applyPlan(ctx, plan, nil, l.deleteCount(plan.Domain.Name))
}

// applyPlan applies plan under its VMI's lock, unless a Delete of the VMI
// began since deletes was read. vmi is the VMI Sync planned for (nil for
// Apply): a domain found running as planned is recorded as steady for it.
func (l *Launcher) applyPlan(ctx context.Context, plan *Plan, vmi *v1.VirtualMachineInstance, deletes uint64) error {
	uid := plan.VMI.UID
	if vmi != nil {
		uid = vmi.UID
	}
	st := l.stateFor(plan.Marks.VMI.Namespace, plan.Marks.VMI.Name, uid)
	return l.bounded(ctx, st, func(ctx context.Context) error {
		if l.deleteCount(st.name) != deletes {
			// A Delete called while this Sync waited for the VMI ran first.
			l.forget(st)
			return fmt.Errorf("%w: %s", ErrDeleted, st.key())
		}
		return l.apply(ctx, st, plan, vmi, deletes)
	})
}

// apply carries out plan for st, whose lock the caller holds. A domain that
// runs as planned costs no libvirt write and no status read, and is
// recorded as steady for vmi when it is not nil (see steady.go).
func (l *Launcher) apply(ctx context.Context, st *vmiState, plan *Plan, vmi *v1.VirtualMachineInstance, deletes uint64) error {
	key := st.key()
	events, gen := st.events.Load(), l.generation()
	cur, err := l.current(ctx, st.name)
	if err != nil {
		return err
	}
	if cur.exists {
		if err := l.checkOwned(cur); err != nil {
			return err
		}
		if old := cur.marks.VMI.UID; old != "" && plan.Marks.VMI.UID != "" && old != plan.Marks.VMI.UID {
			if cur.state.Active() {
				return &ConflictError{Domain: st.name, Owner: cur.marks.Owner,
					Reason: fmt.Sprintf("an earlier VMI of this name (uid %s) still runs; Delete it first", old)}
			}
			l.log.Info("replacing the domain of an earlier VMI of the same name", "vmi", key, "earlier uid", old)
			if err := l.undefine(ctx, st.name); err != nil {
				return err
			}
			if err := hostfiles.RemoveStateFolder(l.cfg.Layout.StateDir, plan.StateFolder); err != nil {
				return wrapErr(err, "remove artifacts of the earlier %s", key)
			}
			st.mu.Lock()
			st.status, st.published = v1.VirtualMachineInstanceStatus{}, false
			st.mu.Unlock()
			cur = currentDomain{}
		}
	}
	if cur.exists && (l.ended(st, cur) || cur.marks.Shutdown != nil) {
		// It ran to its end, or is ending: never again.
		l.refresh(ctx, st, time.Time{})
		return nil
	}

	began := time.Now()
	if _, err := hostfiles.Apply(ctx, plan); err != nil {
		return hostErr(err, key)
	}
	l.log.Debug("host artifacts made", "vmi", key, "took", time.Since(began))

	m := plan.Marks
	if cur.exists {
		m = m.WithRun(cur.marks)
	}
	if liveReady(cur, m) {
		if done, err := l.applyLive(ctx, st, plan, cur.marks); done || err != nil {
			return err // the spec changed while it runs (live.go)
		}
	}
	changed := false
	if !cur.exists || cur.marks.Hash != m.Hash || cur.marks.VMI != m.VMI {
		if err := l.define(ctx, plan, m); err != nil {
			return err
		}
		changed = true
		// Publish what is defined (Scheduled, for a new VMI) before
		// starting.
		l.refresh(ctx, st, time.Time{})
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	if !changed && cur.state.Active() && !(m.Started != nil && m.Started.Pending) && !domain.ShouldResume(cur.state, cur.reason) && st.isPublished() {
		if vmi != nil {
			st.markSteady(vmi, gen, events, deletes)
		}
		l.serveMetrics(st, plan.VMI)
		return nil // running as planned
	}
	if err := l.startOrResume(ctx, st, plan, &m); err != nil {
		l.refresh(ctx, st, time.Time{})
		return err
	}
	l.serveMetrics(st, plan.VMI)
	l.refresh(ctx, st, time.Time{})
	return nil
}

// define defines plan's domain with marks m (the plan's, with what the
// domain had recorded of its run).
func (l *Launcher) define(ctx context.Context, plan *Plan, m hostplan.Marks) error {
	xml := plan.XML
	if m.Started != nil || m.Shutdown != nil || m.Ended != nil {
		var err error
		if xml, err = plan.XMLWith(m); err != nil {
			return err
		}
	}
	began := time.Now()
	return l.do(ctx, func(c *libvirt.Connect) error {
		dom, err := c.DomainDefineXMLFlags(string(xml), libvirt.DOMAIN_DEFINE_VALIDATE)
		if err != nil {
			return wrapErr(err, "define domain %s", plan.Domain.Name)
		}
		dom.Free()
		l.log.Info("domain defined", "vmi", m.Key(), "domain", plan.Domain.Name, "took", time.Since(began))
		return nil
	})
}

// startOrResume starts the domain of a VMI that has not run (recording
// that it has, before it starts), or resumes one paused for a reason other
// than the user.
func (l *Launcher) startOrResume(ctx context.Context, st *vmiState, plan *Plan, m *hostplan.Marks) error {
	v := plan.VMI
	return l.onDomain(ctx, st.name, func(dom *libvirt.Domain) error {
		state, reason, err := dom.GetState()
		if err != nil {
			return wrapErr(err, "read state of domain %s", st.name)
		}
		s, r := domain.State(state), domain.Reason(reason)
		lost := m.Started != nil && st.isStartLost()
		if lost && !s.Active() {
			// libvirtd may still run the start this launcher lost with
			// its connection: writing the marks again waits for any job
			// libvirtd runs on the domain, then its state tells.
			if err := writeMarks(dom, m, false); err != nil {
				return wrapErr(err, "record the start of domain %s", st.name)
			}
			if state, reason, err = dom.GetState(); err != nil {
				return wrapErr(err, "read state of domain %s", st.name)
			}
			s, r = domain.State(state), domain.Reason(reason)
		}
		if lost {
			st.setStartLost(false) // settled below
		}
		switch {
		case s.Active() && m.Started != nil && m.Started.Pending:
			// Started by a launcher that died before confirming it, or
			// by this one's start whose call it lost.
			m.Started.Pending = false
			return wrapErr(writeMarks(dom, m, true), "record the start of domain %s", st.name)
		case s.Active():
			if domain.ShouldResume(s, r) {
				if err := dom.Resume(); err != nil {
					return wrapErr(err, "resume domain %s (paused: %s)", st.name, domain.ReasonString(s, r))
				}
				l.log.Info("domain resumed", "vmi", st.key(), "was paused for", domain.ReasonString(s, r))
			}
			return nil
		case lost && neverRan(r, plan):
			l.log.Info("a lost start never ran: starting the domain again", "vmi", st.key(), "reason", domain.ReasonString(s, r))
		case m.Started != nil:
			// It ran: never again. (A lost start that ran and stopped
			// ends as a start interrupted: hostplan.Judge.)
			return nil
		}
		flags := libvirt.DOMAIN_NONE
		if v.Spec.StartStrategy != nil && *v.Spec.StartStrategy == v1.StartStrategyPaused {
			flags |= libvirt.DOMAIN_START_PAUSED
		}
		m.Started = &hostplan.Started{At: time.Now().UTC().Truncate(time.Second), Pending: true}
		// From the first write of the pending start until its outcome is
		// known and recorded, the start may be lost with the connection:
		// a call that failed may have reached libvirtd all the same.
		st.mu.Lock()
		st.starting, st.startLost = true, true
		st.mu.Unlock()
		defer func() {
			st.mu.Lock()
			st.starting = false
			st.mu.Unlock()
		}()
		if err := writeMarks(dom, m, false); err != nil {
			m.Started = nil
			return wrapErr(err, "record the start of domain %s", st.name)
		}
		began := time.Now()
		if err := dom.CreateWithFlags(flags); err != nil {
			m.Started = nil
			if werr := writeMarks(dom, m, false); werr != nil {
				l.log.Warn("the failed start of a domain stays recorded as begun; the next Sync settles it", "vmi", st.key(), "err", werr)
			} else {
				st.setStartLost(false)
			}
			return wrapErr(err, "start domain %s", st.name)
		}
		st.setStartLost(false)
		m.Started.Pending = false
		if err := writeMarks(dom, m, true); err != nil {
			l.log.Warn("the start of a domain was not confirmed in its metadata", "vmi", st.key(), "err", err)
		}
		l.log.Info("domain started", "vmi", st.key(), "paused", flags&libvirt.DOMAIN_START_PAUSED != 0, "took", time.Since(began))
		return nil
	})
}

// neverRan tells whether a domain shut off for reason r, whose start was
// lost, never ran: libvirt says its start failed, or it is shut off for no
// reason and QEMU never opened its serial log (a domain without one cannot
// tell: it may have run before libvirtd restarted).
func neverRan(r domain.Reason, plan *Plan) bool {
	switch r {
	case domain.ShutoffFailed:
		return true
	case domain.ShutoffUnknown:
		launched, known := qemuLaunched(plan)
		return known && !launched
	}
	return false
}

// qemuLaunched tells whether QEMU was ever launched for plan's domain, as
// far as the files it opens tell: a QEMU process opens its serial console's
// log (known is false for a domain without one).
func qemuLaunched(plan *Plan) (launched, known bool) {
	if plan.Domain.Devices == nil {
		return false, false
	}
	for _, s := range plan.Domain.Devices.Serials {
		if s.Log != nil && s.Log.File != "" {
			_, err := os.Stat(s.Log.File)
			return err == nil, true
		}
	}
	return false, false
}

// writeMarks records m in the domain's metadata: in its persistent
// definition, and in the running domain when live.
func writeMarks(dom *libvirt.Domain, m *hostplan.Marks, live bool) error {
	el, err := m.Element()
	if err != nil {
		return err
	}
	flags := libvirt.DOMAIN_AFFECT_CONFIG
	if live {
		flags |= libvirt.DOMAIN_AFFECT_LIVE
	}
	return dom.SetMetadata(libvirt.DOMAIN_METADATA_ELEMENT, el, hostplan.MetadataPrefix, hostplan.MetadataNS, flags)
}

// currentDomain is a domain as the launcher finds it.
type currentDomain struct {
	name   string
	exists bool
	state  domain.State
	reason domain.Reason
	marks  *hostplan.Marks    // nil when it has none: not a launcher's
	xml    *libvirtxml.Domain // its live definition; nil when only its marks were read
}

// current reads the state and marks of the domain called name (not its
// definition: see readDomain).
func (l *Launcher) current(ctx context.Context, name string) (currentDomain, error) {
	var cur currentDomain
	err := l.read(ctx, func(c *libvirt.Connect) error {
		dom, err := c.LookupDomainByName(name)
		if isNoDomain(err) {
			return nil
		}
		if err != nil {
			return wrapErr(err, "look up domain %s", name)
		}
		defer dom.Free()
		cur, err = readDomain(dom, name, false)
		return err
	})
	return cur, err
}

// readDomain reads a domain's state, reason and marks, and with full its
// live definition too. A domain that vanished meanwhile reads as not
// existing.
func readDomain(dom *libvirt.Domain, name string, full bool) (currentDomain, error) {
	state, reason, err := dom.GetState()
	if isNoDomain(err) {
		return currentDomain{}, nil
	}
	if err != nil {
		return currentDomain{}, wrapErr(err, "read state of domain %s", name)
	}
	cur := currentDomain{name: name, exists: true, state: domain.State(state), reason: domain.Reason(reason)}
	if !full {
		el, err := dom.GetMetadata(libvirt.DOMAIN_METADATA_ELEMENT, hostplan.MetadataNS, libvirt.DOMAIN_AFFECT_CURRENT)
		switch {
		case isNoDomain(err):
			return currentDomain{}, nil
		case libvirtCode(err) == libvirt.ERR_NO_DOMAIN_METADATA:
			return cur, nil
		case err != nil:
			return currentDomain{}, wrapErr(err, "read metadata of domain %s", name)
		}
		cur.marks, err = hostplan.ParseMarks(el)
		return cur, err
	}
	raw, err := dom.GetXMLDesc(0)
	if isNoDomain(err) {
		return currentDomain{}, nil
	}
	if err != nil {
		return currentDomain{}, wrapErr(err, "read XML of domain %s", name)
	}
	if cur.xml, err = domain.Unmarshal([]byte(raw)); err != nil {
		return currentDomain{}, wrapErr(err, "parse XML of domain %s", name)
	}
	cur.marks, err = hostplan.MarksOf(cur.xml)
	return cur, err
}

// checkOwned refuses a domain this launcher does not own.
func (l *Launcher) checkOwned(cur currentDomain) error {
	switch {
	case cur.marks == nil:
		return &ConflictError{Domain: cur.name, Reason: "it was not defined by a vmi2libvirt launcher"}
	case cur.marks.Owner != l.cfg.Owner:
		return &ConflictError{Domain: cur.name, Owner: cur.marks.Owner,
			Reason: fmt.Sprintf("it belongs to the launcher %q, not to %q", cur.marks.Owner, l.cfg.Owner)}
	}
	return nil
}

// ended tells whether the VMI of an existing domain has run to its end.
func (l *Launcher) ended(st *vmiState, cur currentDomain) bool {
	m := cur.marks
	if m.Ended != nil {
		return true
	}
	if m.Started == nil || cur.state.Active() {
		return false
	}
	st.mu.Lock()
	pending := st.startPending()
	st.mu.Unlock()
	return !pending
}

// undefine destroys and undefines the domain called name, with its NVRAM,
// managed save and snapshot metadata. A domain that is not there is no
// error.
func (l *Launcher) undefine(ctx context.Context, name string) error {
	err := l.onDomain(ctx, name, func(dom *libvirt.Domain) error {
		if err := dom.DestroyFlags(libvirt.DOMAIN_DESTROY_DEFAULT); err != nil && !isNotRunning(err) && !isNoDomain(err) {
			return wrapErr(err, "destroy domain %s", name)
		}
		flags := libvirt.DOMAIN_UNDEFINE_NVRAM | libvirt.DOMAIN_UNDEFINE_MANAGED_SAVE |
			libvirt.DOMAIN_UNDEFINE_SNAPSHOTS_METADATA | libvirt.DOMAIN_UNDEFINE_CHECKPOINTS_METADATA
		if err := dom.UndefineFlags(flags); err != nil && !isNoDomain(err) {
			return wrapErr(err, "undefine domain %s", name)
		}
		return nil
	})
	if errors.Is(err, ErrNoDomain) {
		return nil
	}
	return err
}

// deleteCount returns how many Deletes of the domain called name began.
func (l *Launcher) deleteCount(name string) uint64 {
	l.vmisMu.Lock()
	defer l.vmisMu.Unlock()
	return l.deletes[name]
}

// countDelete records that a Delete of the domain called name begins.
func (l *Launcher) countDelete(name string) {
	l.vmisMu.Lock()
	defer l.vmisMu.Unlock()
	if l.deletes == nil {
		l.deletes = map[string]uint64{}
	}
	l.deletes[name]++
}

// forget retires st: the VMI is no longer owned. Watch gets a last event
// with Deleted set when a status of the VMI was published.
func (l *Launcher) forget(st *vmiState) {
	l.stopDeadline(st)
	st.mu.Lock()
	st.deleted = true
	if st.published {
		l.broadcast(st.event(time.Time{}))
	}
	st.mu.Unlock()
	l.vmisMu.Lock()
	if l.vmis[st.name] == st {
		delete(l.vmis, st.name)
	}
	l.vmisMu.Unlock()
}

// fileExists tells whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
