package launcher

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
	"github.com/vmi2libvirt/vmi2libvirt/internal/hostfiles"
)

// ErrMigration is the class of errors of a live migration that did not
// complete: the guest runs on on the source (MigrationError says why).
var ErrMigration = errors.New("launcher: migration failed")

// MigrationError is a live migration that failed or was aborted; the
// guest runs on on the source. State is its migrationState.
type MigrationError struct {
	VMI   string
	State *v1.VirtualMachineInstanceMigrationState
	Err   error
}

func (e *MigrationError) Error() string {
	return fmt.Sprintf("launcher: migration of %s to %s failed, the guest stays on %s: %v", e.VMI, e.State.TargetNode, e.State.SourceNode, e.Err)
}

// Unwrap gives ErrMigration and the cause.
func (e *MigrationError) Unwrap() []error { return []error{ErrMigration, e.Err} }

// Defaults of MigrateOptions, KubeVirt's.
const (
	DefaultMigrationURI              = "tcp://127.0.0.1"
	DefaultMigrationProgressTimeout  = 150 * time.Second
	DefaultMigrationCompletionPerGiB = 150 * time.Second
	DefaultMigrationPoll             = 400 * time.Millisecond
)

// MigrateOptions shape a live migration (Launcher.Migrate).
type MigrateOptions struct {
	// UID names the migration (a VirtualMachineInstanceMigration's UID);
	// empty: a random one.
	UID types.UID
	// MigrationURI is where QEMU's migration stream and a storage copy's
	// NBD server connect to on the target, tcp://HOST; the target listens
	// on HOST only. Default DefaultMigrationURI: nothing listens beyond
	// loopback without TLS.
	MigrationURI string
	// ProgressTimeout aborts a migration whose remaining data has not
	// shrunk for that long; CompletionTimeoutPerGiB one that takes longer
	// than that per GiB of memory and copied disk. Defaults above.
	ProgressTimeout         time.Duration
	CompletionTimeoutPerGiB time.Duration
	// PollInterval is how often the job's statistics are read.
	PollInterval time.Duration
	// Bandwidth caps the migration stream, in bytes per second (KubeVirt's
	// bandwidthPerMigration); libvirt takes whole MiB/s, so it is rounded
	// up to one. 0: unlimited.
	Bandwidth uint64
	// Progress, when set, receives each reading of the job.
	Progress func(MigrationProgress)
}

func (o MigrateOptions) withDefaults() MigrateOptions {
	if o.UID == "" {
		o.UID = uuid.NewUUID()
	}
	if o.MigrationURI == "" {
		o.MigrationURI = DefaultMigrationURI
	}
	if o.ProgressTimeout <= 0 {
		o.ProgressTimeout = DefaultMigrationProgressTimeout
	}
	if o.CompletionTimeoutPerGiB <= 0 {
		o.CompletionTimeoutPerGiB = DefaultMigrationCompletionPerGiB
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultMigrationPoll
	}
	return o
}

// MigrationProgress is one reading of a migration job (libvirt's job
// statistics): data in bytes, memory and disk together in Data*.
type MigrationProgress struct {
	Elapsed                                 time.Duration
	DataTotal, DataProcessed, DataRemaining uint64
	DiskTotal, DiskProcessed, DiskRemaining uint64
	// MemIteration counts the passes over the guest's memory.
	MemIteration uint64
	// Downtime is the expected downtime while it runs, the real one in
	// the reading after completion.
	Downtime time.Duration
}

func progressOf(j *libvirt.DomainJobInfo) MigrationProgress {
	return MigrationProgress{
		Elapsed:   time.Duration(j.TimeElapsed) * time.Millisecond,
		DataTotal: j.DataTotal, DataProcessed: j.DataProcessed, DataRemaining: j.DataRemaining,
		DiskTotal: j.DiskTotal, DiskProcessed: j.DiskProcessed, DiskRemaining: j.DiskRemaining,
		MemIteration: j.MemIteration,
		Downtime:     time.Duration(j.Downtime) * time.Millisecond,
	}
}

// Migrate moves the running VMI vmi, whose domain this launcher owns, live
// to the libvirt host of target, another launcher (another URI and owner;
// its own state folder; its own image store or the same one). The target
// prepares first, as it would for Sync: its plan of
// the VMI on its host with the image digests the source pinned, its
// artifacts (state folder, cloud-init and config ISOs byte-identical,
// empty overlays over the same backing images); a target that cannot
// prepare leaves the source untouched. Then the source's libvirtd migrates
// the domain peer to peer (LIVE|PEER2PEER|PERSIST_DEST) with the source's
// live XML, the target's paths and marks in it; the writable disks of the
// state folder are copied incrementally (NON_SHARED_INC) and the others,
// such as hostDisks, are shared by both hosts (UNSAFE: libvirt cannot tell
// that a local file system is shared).
//
// Progress is read every PollInterval and given to opts.Progress; the
// migration is aborted when its remaining data stops shrinking for
// ProgressTimeout, when it outlasts CompletionTimeoutPerGiB per GiB, or
// when ctx ends. Both domains' metadata record the migration
// (hostplan.Migration) and the status reports it (migrationState); a
// launcher restarted on either side settles it (hostplan.JudgeMigration).
//
// It returns once the target runs the guest and has confirmed it: the VMI
// is then the target's (its Watch reports it), the source's domain and
// artifacts are gone and its Watch reports the VMI deleted. A migration
// that fails is a *MigrationError (ErrMigration): the guest runs on on the
// source, and the target's artifacts are removed.
func (l *Launcher) Migrate(ctx context.Context, vmi *v1.VirtualMachineInstance, target *Launcher, opts MigrateOptions) (*v1.VirtualMachineInstanceMigrationState, error) {
	switch {
	case vmi == nil || target == nil:
		return nil, errors.New("launcher: Migrate needs a VMI and a target")
	case target == l || target.cfg.Owner == l.cfg.Owner:
		return nil, fmt.Errorf("launcher: a migration's target must be another owner than %q", l.cfg.Owner)
	case filepath.Clean(target.cfg.Layout.StateDir) == filepath.Clean(l.cfg.Layout.StateDir):
		// QEMU's sockets live there: the target's would replace the source's.
		return nil, fmt.Errorf("launcher: a migration's target needs a StateDir of its own, not %s", l.cfg.Layout.StateDir)
	case l.closed.Load() || target.closed.Load():
		return nil, ErrClosed
	}
	opts = opts.withDefaults()
	st, tst, err := l.lockBoth(ctx, target, vmi)
	if err != nil {
		return nil, err
	}
	defer st.release()
	defer tst.release()
	m := migration{l: l, target: target, st: st, tst: tst, opts: opts}
	return m.run(ctx, vmi)
}

// lockBoth takes the VMI's lock on this launcher, then on target, and
// returns both states (the caller releases them).
func (l *Launcher) lockBoth(ctx context.Context, target *Launcher, vmi *v1.VirtualMachineInstance) (st, tst *vmiState, err error) {
	st = l.stateOf(vmi)
	if err := st.acquire(ctx); err != nil {
		return nil, nil, err
	}
	tst = target.stateFor(st.namespace, st.vmi, vmi.UID)
	if err := tst.acquire(ctx); err != nil {
		st.release()
		return nil, nil, err
	}
	return st, tst, nil
}

// migration is one Migrate under way.
type migration struct {
	l, target *Launcher
	st, tst   *vmiState
	opts      MigrateOptions
	mark      *hostplan.Migration
	src, dst  *Plan
	srcMarks  hostplan.Marks // the source domain's marks
}

func (m *migration) run(ctx context.Context, vmi *v1.VirtualMachineInstance) (*v1.VirtualMachineInstanceMigrationState, error) {
	l, name := m.l, m.st.name
	var cur currentDomain
	if err := l.owned(ctx, name, func(_ *libvirt.Domain, c currentDomain) error {
		cur = c
		return nil
	}); err != nil {
		return nil, err
	}
	switch {
	case !cur.state.Active() || cur.marks.Started == nil:
		return nil, fmt.Errorf("%w: %s (%s)", ErrNotRunning, m.st.key(), domain.ReasonString(cur.state, cur.reason))
	case cur.marks.Shutdown != nil:
		return nil, fmt.Errorf("launcher: %s is shutting down: not migrated", m.st.key())
	case cur.marks.Migration != nil && !cur.marks.Migration.Finished():
		return nil, fmt.Errorf("launcher: a migration of %s is under way already", m.st.key())
	}
	m.srcMarks = *cur.marks

	var err error
	if m.src, err = l.plan(ctx, vmi); err != nil {
		return nil, err
	}
	defer l.releaseImages(m.src.Marks.Images)
	if m.dst, err = m.target.prepareIncoming(ctx, m.tst, vmi, cur.marks.Images); err != nil {
		return nil, fmt.Errorf("launcher: the target %s cannot prepare %s: %w", m.target.cfg.Owner, m.st.key(), err)
	}
	defer m.target.releaseImages(m.dst.Marks.Images)

	now := time.Now().UTC().Truncate(time.Millisecond)
	m.mark = &hostplan.Migration{UID: m.opts.UID, Role: hostplan.MigrationSource, Source: l.cfg.Owner, Target: m.target.cfg.Owner,
		TargetURI: m.target.cfg.URI, Mode: v1.MigrationPreCopy, Start: now}
	err = m.migrate(ctx)
	if err != nil {
		return m.failed(err)
	}
	return m.completed(ctx)
}

// prepareIncoming makes what the target needs before a migration of vmi
// arrives: its plan on this host, with the images pinned to the source's
// digests, and the plan's artifacts. A domain of the VMI's name here is a
// conflict. What it made is removed when it fails. The caller holds st's
// lock, and releases the plan's images.
func (l *Launcher) prepareIncoming(ctx context.Context, st *vmiState, vmi *v1.VirtualMachineInstance, pinned []hostplan.ImageUse) (*Plan, error) {
	cur, err := l.current(ctx, st.name)
	if err != nil {
		return nil, err
	}
	if cur.exists {
		return nil, &ConflictError{Domain: st.name, Owner: ownerOf(cur), Reason: "a domain of this name exists on the target"}
	}
	if pinned == nil {
		pinned = []hostplan.ImageUse{}
	}
	p, err := l.planPinned(ctx, vmi, pinned)
	if err != nil {
		return nil, err
	}
	if _, err := hostfiles.Apply(ctx, p); err != nil {
		l.releaseImages(p.Marks.Images)
		if rerr := hostfiles.RemoveStateFolder(l.cfg.Layout.StateDir, p.StateFolder); rerr != nil {
			l.log.Warn("the artifacts of a target that could not prepare were not removed", "vmi", st.key(), "err", rerr)
		}
		return nil, hostErr(err, st.key())
	}
	return p, nil
}

func ownerOf(cur currentDomain) string {
	if cur.marks == nil {
		return ""
	}
	return cur.marks.Owner
}

// migrate records the migration in the source's marks and runs libvirt's
// migration job, watching its progress, until it ends.
func (m *migration) migrate(ctx context.Context) error {
	l, name := m.l, m.st.name
	paths, err := hostplan.MigrationPaths(m.src, m.dst)
	if err != nil {
		return err
	}
	tm := m.dst.Marks.WithRun(&m.srcMarks)
	tmark := *m.mark
	tmark.Role = hostplan.MigrationTarget
	tm.Migration = &tmark
	sm := m.srcMarks
	sm.Migration = m.mark

	var params libvirt.DomainMigrateParameters
	var flags libvirt.DomainMigrateFlags
	var dataSize uint64
	err = l.onDomain(ctx, name, func(dom *libvirt.Domain) error {
		if err := writeMarks(dom, &sm, true); err != nil {
			return wrapErr(err, "record the migration of domain %s", name)
		}
		live, err := dom.GetXMLDesc(libvirt.DOMAIN_XML_MIGRATABLE | libvirt.DOMAIN_XML_SECURE)
		if err != nil {
			return wrapErr(err, "read the live XML of domain %s", name)
		}
		persist, err := dom.GetXMLDesc(libvirt.DOMAIN_XML_MIGRATABLE | libvirt.DOMAIN_XML_SECURE | libvirt.DOMAIN_XML_INACTIVE)
		if err != nil {
			return wrapErr(err, "read the XML of domain %s", name)
		}
		params, flags, dataSize, err = migrateParams(live, persist, paths, tm, m.opts.MigrationURI, m.opts.Bandwidth)
		return err
	})
	if err != nil {
		return err
	}
	l.log.Info("migration begins", "vmi", m.st.key(), "to", m.target.cfg.Owner, "uri", m.target.cfg.URI,
		"copied disks", params.MigrateDisks, "uid", m.opts.UID)

	done := make(chan error, 1)
	if err := l.addWork(); err != nil {
		return err
	}
	go func() {
		defer l.wg.Done()
		done <- l.do(context.Background(), lookupThen(name, func(dom *libvirt.Domain) error {
			return wrapErr(dom.MigrateToURI3(m.target.cfg.URI, &params, flags), "migrate domain %s to %s", name, m.target.cfg.URI)
		}))
	}()
	return m.watch(ctx, done, dataSize)
}

// migrateParams are libvirt's parameters and flags of a migration of the
// domain whose live and persistent XML are given, to the target's paths
// and marks tm, with the stream capped at bandwidth bytes per second (0:
// unlimited), and the data it moves (memory and copied disks) in bytes.
func migrateParams(live, persist string, paths map[string]string, tm hostplan.Marks, migrationURI string, bandwidth uint64) (libvirt.DomainMigrateParameters, libvirt.DomainMigrateFlags, uint64, error) {
	var p libvirt.DomainMigrateParameters
	destXML, err := hostplan.MigrationXML([]byte(live), paths, tm)
	if err != nil {
		return p, 0, 0, err
	}
	persistXML, err := hostplan.MigrationXML([]byte(persist), paths, tm)
	if err != nil {
		return p, 0, 0, err
	}
	d, err := domain.Unmarshal([]byte(live))
	if err != nil {
		return p, 0, 0, fmt.Errorf("launcher: parse the live XML: %w", err)
	}
	u, err := url.Parse(migrationURI)
	if err != nil || u.Scheme != "tcp" || u.Hostname() == "" {
		return p, 0, 0, fmt.Errorf("launcher: migration URI %q: want tcp://HOST[:PORT]", migrationURI)
	}
	p.URISet, p.URI = true, migrationURI
	p.ListenAddressSet, p.ListenAddress = true, u.Hostname()
	p.DestXMLSet, p.DestXML = true, string(destXML)
	p.PersistXMLSet, p.PersistXML = true, string(persistXML)
	if bandwidth > 0 {
		p.BandwidthSet, p.Bandwidth = true, (bandwidth+1<<20-1)>>20
	}
	flags := libvirt.MIGRATE_LIVE | libvirt.MIGRATE_PEER2PEER | libvirt.MIGRATE_PERSIST_DEST
	copied, shared := hostplan.CopiedDisks(d, paths)
	if len(copied) > 0 {
		flags |= libvirt.MIGRATE_NON_SHARED_INC
		p.MigrateDisksSet, p.MigrateDisks = true, copied
	}
	if shared {
		// A disk outside the state folder (a hostDisk): both hosts see it
		// at the same path; libvirt cannot tell that a local file
		// system is shared.
		flags |= libvirt.MIGRATE_UNSAFE
	}
	var size uint64
	if d.Memory != nil {
		size = uint64(d.Memory.Value) << 10 // libvirt writes KiB
	}
	for _, disk := range d.Devices.Disks {
		for _, c := range copied {
			if disk.Target != nil && disk.Target.Dev == c && disk.Source != nil && disk.Source.File != nil {
				size += fileSize(disk.Source.File.File)
			}
		}
	}
	return p, flags, size, nil
}

// watch follows the migration job until done delivers its end, reporting
// progress and aborting it on a timeout or when ctx ends.
func (m *migration) watch(ctx context.Context, done <-chan error, dataSize uint64) error {
	l, name, o := m.l, m.st.name, m.opts
	began := time.Now()
	completion := time.Duration(float64(o.CompletionTimeoutPerGiB) * float64(dataSize) / float64(1<<30))
	if completion < o.CompletionTimeoutPerGiB {
		completion = o.CompletionTimeoutPerGiB
	}
	lowest, lastProgress := uint64(0), time.Now()
	tick := time.NewTicker(o.PollInterval)
	defer tick.Stop()
	var abortFor error
	abort := func(why error) {
		if abortFor != nil {
			return
		}
		abortFor = why
		m.mark.Abort = v1.MigrationAbortInProgress
		l.log.Warn("aborting the migration", "vmi", m.st.key(), "why", why)
		if err := l.read(context.Background(), lookupThen(name, func(dom *libvirt.Domain) error { return dom.AbortJob() })); err != nil {
			l.log.Warn("abort of the migration failed", "vmi", m.st.key(), "err", err)
		}
	}
	ctxDone := ctx.Done()
	for {
		select {
		case err := <-done:
			if err != nil && abortFor != nil {
				return fmt.Errorf("%w (%w)", abortFor, err)
			}
			return err
		case <-ctxDone:
			ctxDone = nil
			abort(fmt.Errorf("aborted: %w", ctx.Err()))
		case <-tick.C:
			var j *libvirt.DomainJobInfo
			err := l.read(ctx, lookupThen(name, func(dom *libvirt.Domain) error {
				var err error
				j, err = dom.GetJobStats(0)
				return err
			}))
			if err != nil || j.Type == libvirt.DOMAIN_JOB_NONE {
				continue
			}
			p := progressOf(j)
			if o.Progress != nil {
				o.Progress(p)
			}
			if j.DataRemainingSet && (lowest == 0 || p.DataRemaining < lowest) {
				lowest, lastProgress = p.DataRemaining, time.Now()
			}
			switch {
			case time.Since(lastProgress) > o.ProgressTimeout:
				abort(fmt.Errorf("no progress for %s (%d bytes remaining)", o.ProgressTimeout, lowest))
			case time.Since(began) > completion:
				abort(fmt.Errorf("not completed within %s (%s per GiB of %d bytes)", completion, o.CompletionTimeoutPerGiB, dataSize))
			}
		}
	}
}

// completed confirms the guest on the target and hands the VMI over: the
// target's marks record the completion and its launcher owns the VMI; the
// source's domain and artifacts are removed.
func (m *migration) completed(ctx context.Context) (*v1.VirtualMachineInstanceMigrationState, error) {
	l, t, name := m.l, m.target, m.st.name
	now := time.Now()
	var downtime time.Duration
	_ = l.read(ctx, lookupThen(name, func(dom *libvirt.Domain) error {
		if j, err := dom.GetJobStats(libvirt.DOMAIN_JOB_STATS_COMPLETED); err == nil {
			downtime = time.Duration(j.Downtime) * time.Millisecond
			if m.opts.Progress != nil {
				m.opts.Progress(progressOf(j))
			}
		}
		return nil
	}))
	var tcur currentDomain
	err := t.owned(ctx, name, func(dom *libvirt.Domain, c currentDomain) error {
		tcur = c
		if !c.state.Active() {
			return fmt.Errorf("launcher: the migrated domain %s does not run on the target (%s)", name, domain.ReasonString(c.state, c.reason))
		}
		c.marks.Migration.Finish(now, "")
		return wrapErr(writeMarks(dom, c.marks, true), "confirm the migration of domain %s", name)
	})
	if err != nil {
		// libvirt said it completed: the guest is the target's, whatever
		// its marks say; a restarted target settles them.
		l.log.Error("the target did not confirm a completed migration", "vmi", m.st.key(), "err", err)
	}
	m.mark.Finish(now, "")
	state := m.mark.State()
	if tcur.marks != nil && tcur.marks.Migration != nil {
		state = tcur.marks.Migration.State()
	}
	t.refresh(ctx, m.tst, time.Time{})
	if err := m.l.leave(ctx, m.st, m.src.StateFolder); err != nil {
		l.log.Warn("the source of a completed migration was not cleaned up", "vmi", m.st.key(), "err", err)
	}
	l.log.Info("migration completed", "vmi", m.st.key(), "to", t.cfg.Owner, "downtime", downtime)
	return state, nil
}

// leave removes the domain of a VMI that migrated away, and its state
// folder, and forgets the VMI. For this launcher the VMI is deleted: a
// Sync of it that waited for its lock while it migrated fails with
// ErrDeleted rather than define it here again (it had decided before the
// migration began; the soak saw the source start the guest a second time
// 20 ms after the migration completed, while its outcome could not be
// written to the VMI).
func (l *Launcher) leave(ctx context.Context, st *vmiState, folder string) error {
	l.countDelete(st.name)
	l.forget(st)
	if err := l.undefine(ctx, st.name); err != nil {
		return err
	}
	return hostfiles.RemoveStateFolder(l.cfg.Layout.StateDir, folder)
}

// failed records a failed migration on the source, whose guest runs on,
// and removes what the target prepared.
func (m *migration) failed(cause error) (*v1.VirtualMachineInstanceMigrationState, error) {
	l, t, name := m.l, m.target, m.st.name
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	m.mark.Finish(time.Now(), cause.Error())
	sm := m.srcMarks
	sm.Migration = m.mark
	if err := l.onDomain(ctx, name, func(dom *libvirt.Domain) error {
		state, _, err := dom.GetState()
		if err != nil {
			return err
		}
		return writeMarks(dom, &sm, domain.State(state).Active())
	}); err != nil {
		l.log.Warn("the failed migration was not recorded", "vmi", m.st.key(), "err", err)
	}
	if cur, err := t.current(ctx, name); err == nil && cur.exists && ownerOf(cur) == t.cfg.Owner {
		_ = t.undefine(ctx, name)
	}
	t.forget(m.tst)
	if err := hostfiles.RemoveStateFolder(t.cfg.Layout.StateDir, m.dst.StateFolder); err != nil {
		l.log.Warn("the target's artifacts of a failed migration were not removed", "vmi", m.st.key(), "err", err)
	}
	l.refresh(ctx, m.st, time.Time{})
	state := m.mark.State()
	l.log.Warn("migration failed", "vmi", m.st.key(), "to", t.cfg.Owner, "err", cause)
	return state, &MigrationError{VMI: m.st.key(), State: state, Err: cause}
}

// AbortMigration aborts the migration of vmi under way from this launcher
// (libvirt's AbortJob); Migrate then returns a *MigrationError and the
// guest runs on here. No migration under way is ErrNotRunning.
func (l *Launcher) AbortMigration(ctx context.Context, vmi *v1.VirtualMachineInstance) error {
	name := l.stateOf(vmi).name
	return l.read(ctx, lookupThen(name, func(dom *libvirt.Domain) error {
		j, err := dom.GetJobInfo()
		if err != nil {
			return wrapErr(err, "read the job of domain %s", name)
		}
		if j.Type == libvirt.DOMAIN_JOB_NONE {
			return fmt.Errorf("%w: no migration of %s under way", ErrNotRunning, name)
		}
		return wrapErr(dom.AbortJob(), "abort the migration of domain %s", name)
	}))
}

// fileSize is the size of the file at path, 0 when it cannot be read.
func fileSize(path string) uint64 {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return uint64(fi.Size())
}
