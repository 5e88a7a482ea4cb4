package launcher

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
	"github.com/vmi2libvirt/vmi2libvirt/internal/hostfiles"
)

// A migration whose watcher died: the process that called Migrate was
// killed (SIGKILL) while libvirt's job ran. libvirtd drives a peer-to-peer
// migration by itself, so the job runs on without a watcher and ends
// either way; what it came to is in libvirt's state and in both domains'
// marks ("state lives in libvirt"), as KubeVirt's virt-handler learns it
// from the domains' migration metadata (pkg/virt-handler
// migration-source.go: a failure from the source's, migration-target.go:
// the completion only once the target's domain runs with an end in its
// metadata; nodeName moves then, never before).
//
// What a restarted launcher decides, by where it is:
//
//   - at New (adopt, settleMigration): each domain it owns whose marks
//     record an unfinished migration is judged by hostplan.JudgeMigration —
//     a source still in the job, or a target still receiving, is left to
//     it; a source that runs with no job records the failure (the guest
//     stayed); a source shut off as migrated is removed with its state
//     folder (the guest left); a target that runs with no job records the
//     completion; a target that does not run is removed (the guest never
//     arrived);
//   - when asked (SettleMigration, what a restarted migration source
//     calls for the migration its predecessor began): it waits while
//     libvirt's job runs (aborting it when ctx ends, as Migrate would),
//     then decides from both sides by settleRules.

// settleOutcome is what SettleMigration concludes from both sides.
type settleOutcome int

const (
	// settleWait: libvirt still moves the guest (a job on the source, or
	// a target still receiving).
	settleWait settleOutcome = iota
	// settleStayed: the source runs and moves no more: failed, the guest
	// stays; the target's leftovers go.
	settleStayed
	// settleLeft: the target runs the migration's domain and the source
	// does not: completed; the source's domain and folder go.
	settleLeft
	// settleLost: neither side runs the guest.
	settleLost
	// settleBoth: both sides run it: nothing is touched.
	settleBoth
)

// settleSides is what SettleMigration reads of both sides.
type settleSides struct {
	sourceJob, sourceRuns bool
	targetReceiving       bool // paused for the migration, or a job on it
	targetRuns            bool // the migration's domain, owned by the target, runs
}

// settleRules decide SettleMigration, first match wins.
var settleRules = []struct {
	when    func(settleSides) bool
	outcome settleOutcome
}{
	{func(s settleSides) bool { return s.sourceJob || s.targetReceiving }, settleWait},
	{func(s settleSides) bool { return s.sourceRuns && s.targetRuns }, settleBoth},
	{func(s settleSides) bool { return s.sourceRuns }, settleStayed},
	{func(s settleSides) bool { return s.targetRuns }, settleLeft},
	{func(settleSides) bool { return true }, settleLost},
}

func decideSettle(s settleSides) settleOutcome {
	for _, r := range settleRules {
		if r.when(s) {
			return r.outcome
		}
	}
	return settleLost
}

// SettleMigration finishes the migration opts.UID of vmi from this
// launcher to target that no Migrate call watches: one that this
// launcher's owner began in a process that was killed since. It reads
// libvirt's job every opts.PollInterval (opts.Progress gets the readings)
// until it ends — aborting it (AbortJob) when ctx ends, as Migrate does —
// then decides from both sides (settleRules):
//
//   - the source runs with no job: the migration failed and the guest
//     stays here (*MigrationError, ErrMigration); the target's domain and
//     state folder, when left, are removed;
//   - the source does not run and the target runs the migration's domain:
//     it completed; the target's marks record the completion, the VMI is
//     the target's, this launcher's domain and state folder are removed;
//     the migrationState is returned;
//   - neither runs it, or both do: an error; nothing is touched.
//
// A migration this launcher has no trace of (its domain runs with no job
// and no mark of opts.UID) failed before libvirt's job began. ctx ending
// aborts the job; SettleMigration still decides and returns.
func (l *Launcher) SettleMigration(ctx context.Context, vmi *v1.VirtualMachineInstance, target *Launcher, opts MigrateOptions) (*v1.VirtualMachineInstanceMigrationState, error) {
	switch {
	case vmi == nil || target == nil:
		return nil, errors.New("launcher: SettleMigration needs a VMI and a target")
	case target == l || target.cfg.Owner == l.cfg.Owner:
		return nil, fmt.Errorf("launcher: a migration's target must be another owner than %q", l.cfg.Owner)
	case l.closed.Load() || target.closed.Load():
		return nil, ErrClosed
	}
	if opts.UID == "" {
		return nil, errors.New("launcher: SettleMigration needs the migration's UID")
	}
	opts = opts.withDefaults()
	// ctx ending aborts the job; the settling itself goes on.
	st, tst, err := l.lockBoth(context.WithoutCancel(ctx), target, vmi)
	if err != nil {
		return nil, err
	}
	defer st.release()
	defer tst.release()
	s := settling{l: l, target: target, st: st, tst: tst, opts: opts}
	return s.run(ctx)
}

// settling is one SettleMigration under way.
type settling struct {
	l, target *Launcher
	st, tst   *vmiState
	opts      MigrateOptions
	aborted   error // why this settling aborted libvirt's job, if it did
}

func (s *settling) run(ctx context.Context) (*v1.VirtualMachineInstanceMigrationState, error) {
	tick := time.NewTicker(s.opts.PollInterval)
	defer tick.Stop()
	waited := time.Now()
	ctxDone := ctx.Done()
	for {
		sides, src, dst, err := s.read(context.Background())
		if err != nil {
			return nil, err
		}
		outcome := decideSettle(sides)
		if outcome != settleWait {
			s.l.log.Info("settled a migration no launcher watched", "vmi", s.st.key(), "uid", s.opts.UID,
				"outcome", settleNames[outcome], "waited", time.Since(waited).Round(time.Millisecond))
			return s.decide(outcome, src, dst)
		}
		select {
		case <-ctxDone:
			ctxDone = nil
			s.abort(ctx.Err())
		case <-tick.C:
		}
	}
}

var settleNames = map[settleOutcome]string{
	settleWait: "under way", settleStayed: "stayed on the source", settleLeft: "left for the target",
	settleLost: "runs on neither side", settleBoth: "runs on both sides",
}

// read reads both sides, and reports the source's job to opts.Progress.
func (s *settling) read(ctx context.Context) (settleSides, currentDomain, currentDomain, error) {
	var sides settleSides
	name := s.st.name
	src, err := s.l.current(ctx, name)
	if err != nil {
		return sides, src, currentDomain{}, err
	}
	if src.exists && ownerOf(src) == s.l.cfg.Owner {
		sides.sourceRuns = src.state.Active()
		if j := jobOf(ctx, s.l, name); j != nil {
			sides.sourceJob = true
			if s.opts.Progress != nil {
				s.opts.Progress(progressOf(j))
			}
		}
	}
	dst, err := s.target.current(ctx, name)
	if err != nil {
		return sides, src, dst, err
	}
	if dst.exists && ownerOf(dst) == s.target.cfg.Owner && dst.marks.Migration != nil && dst.marks.Migration.UID == s.opts.UID {
		incoming := dst.state == domain.StatePaused && dst.reason == domain.PausedMigration
		sides.targetReceiving = incoming || jobOf(ctx, s.target, name) != nil
		sides.targetRuns = dst.state.Active() && !incoming
	}
	return sides, src, dst, nil
}

// jobOf is the job libvirt runs on the domain name of l's host, nil when
// none runs (or it cannot be read).
func jobOf(ctx context.Context, l *Launcher, name string) *libvirt.DomainJobInfo {
	var j *libvirt.DomainJobInfo
	err := l.read(ctx, lookupThen(name, func(dom *libvirt.Domain) error {
		var err error
		j, err = dom.GetJobStats(0)
		return err
	}))
	if err != nil || j == nil || j.Type == libvirt.DOMAIN_JOB_NONE {
		return nil
	}
	return j
}

// abort aborts libvirt's job once, for why.
func (s *settling) abort(why error) {
	if s.aborted != nil {
		return
	}
	s.aborted = fmt.Errorf("aborted: %w", why)
	s.l.log.Warn("aborting a migration no launcher watched", "vmi", s.st.key(), "why", why)
	if err := s.l.read(context.Background(), lookupThen(s.st.name, func(dom *libvirt.Domain) error { return dom.AbortJob() })); err != nil {
		s.l.log.Warn("abort of the migration failed", "vmi", s.st.key(), "err", err)
	}
}

// decide carries out outcome, src and dst being both sides as read.
func (s *settling) decide(outcome settleOutcome, src, dst currentDomain) (*v1.VirtualMachineInstanceMigrationState, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, t, name := s.l, s.target, s.st.name
	mark := s.markOf(src, dst)
	switch outcome {
	case settleStayed:
		cause := s.aborted
		if cause == nil {
			cause = errors.New("libvirt's migration job ended with the guest still here, while no launcher watched it")
			if mark.Failed && mark.Reason != "" {
				cause = errors.New(mark.Reason)
			}
		}
		if s.aborted != nil {
			mark.Abort = v1.MigrationAbortInProgress
		}
		if !mark.Failed || s.aborted != nil {
			mark.Finish(time.Now(), cause.Error())
		}
		if src.marks != nil {
			m := *src.marks
			m.Migration = mark
			if err := l.onDomain(ctx, name, func(dom *libvirt.Domain) error { return writeMarks(dom, &m, true) }); err != nil {
				l.log.Warn("the failed migration was not recorded", "vmi", s.st.key(), "err", err)
			}
		}
		if dst.exists && ownerOf(dst) == t.cfg.Owner {
			_ = t.undefine(ctx, name)
		}
		t.forget(s.tst)
		if err := hostfiles.RemoveStateFolder(t.cfg.Layout.StateDir, filepath.Join(t.cfg.Layout.StateDir, name)); err != nil {
			l.log.Warn("the target's artifacts of a failed migration were not removed", "vmi", s.st.key(), "err", err)
		}
		l.refresh(ctx, s.st, time.Time{})
		state := mark.State()
		return state, &MigrationError{VMI: s.st.key(), State: state, Err: cause}
	case settleLeft:
		tm := *dst.marks
		if !tm.Migration.Completed {
			tm.Migration.Finish(time.Now(), "")
			if err := t.onDomain(ctx, name, func(dom *libvirt.Domain) error { return writeMarks(dom, &tm, true) }); err != nil {
				l.log.Warn("the target's marks do not record the completion", "vmi", s.st.key(), "err", err)
			}
		}
		t.refresh(ctx, s.tst, time.Time{})
		if err := l.leave(ctx, s.st, filepath.Join(l.cfg.Layout.StateDir, name)); err != nil {
			l.log.Warn("the source of a completed migration was not cleaned up", "vmi", s.st.key(), "err", err)
		}
		return tm.Migration.State(), nil
	case settleBoth:
		return nil, fmt.Errorf("launcher: the migration %s of %s: the guest runs on both %s and %s; left as it is", s.opts.UID, s.st.key(), l.cfg.Owner, t.cfg.Owner)
	}
	state := mark.State()
	return state, &MigrationError{VMI: s.st.key(), State: state,
		Err: fmt.Errorf("the guest runs on neither %s nor %s", l.cfg.Owner, t.cfg.Owner)}
}

// markOf is the migration's mark as the sides recorded it: the source's,
// else the target's (with the source's role), else a new one.
func (s *settling) markOf(src, dst currentDomain) *hostplan.Migration {
	for _, c := range []currentDomain{src, dst} {
		if c.marks != nil && c.marks.Migration != nil && c.marks.Migration.UID == s.opts.UID {
			m := *c.marks.Migration
			m.Role = hostplan.MigrationSource
			return &m
		}
	}
	return &hostplan.Migration{UID: s.opts.UID, Role: hostplan.MigrationSource, Source: s.l.cfg.Owner, Target: s.target.cfg.Owner,
		TargetURI: s.target.cfg.URI, Mode: v1.MigrationPreCopy, Start: time.Now().UTC().Truncate(time.Millisecond)}
}

// settleMigration decides a migration that the domain's marks m record as
// unfinished, found by a launcher that did not run it (after a restart),
// and tells whether the VMI left this launcher (its domain is gone).
func (l *Launcher) settleMigration(ctx context.Context, m *hostplan.Marks) bool {
	name := m.VMI.Namespace + "_" + m.VMI.Name
	left := false
	err := l.onDomain(ctx, name, func(dom *libvirt.Domain) error {
		state, reason, err := dom.GetState()
		if err != nil {
			return err
		}
		job := false
		if j, err := dom.GetJobInfo(); err == nil {
			job = j.Type != libvirt.DOMAIN_JOB_NONE
		}
		s := domain.State(state)
		verdict := hostplan.JudgeMigration(m.Migration, true, s, domain.Reason(reason), job)
		l.log.Info("settling a migration a launcher left unfinished", "vmi", m.Key(), "role", m.Migration.Role, "verdict", verdict)
		switch verdict {
		case hostplan.MigrationUnderWay:
			return nil
		case hostplan.MigrationStayed:
			m.Migration.Finish(time.Now(), "the migration ended while no launcher watched it")
		case hostplan.MigrationArrived:
			m.Migration.Finish(time.Now(), "")
		case hostplan.MigrationLeft, hostplan.MigrationNeverArrived:
			left = true
			return nil
		}
		return writeMarks(dom, m, s.Active())
	})
	if err != nil {
		l.log.Warn("settling a migration failed", "vmi", m.Key(), "err", err)
		return false
	}
	if left {
		st := l.stateFor(m.VMI.Namespace, m.VMI.Name, m.VMI.UID)
		folder := filepath.Join(l.cfg.Layout.StateDir, name)
		if err := l.leave(ctx, st, folder); err != nil {
			l.log.Warn("removing a migrated domain failed", "vmi", m.Key(), "err", err)
		}
	}
	return left
}
