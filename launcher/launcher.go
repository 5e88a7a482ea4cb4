package launcher

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
)

// Launcher runs VMIs on one libvirt connection. Create it with New; all its
// methods are safe for concurrent use. Close releases it.
//
// What the launcher decides from — which VMI a domain runs, who owns it,
// whether it has been started, a shutdown under way and its deadline, how
// it ended — lives in each domain's metadata (see marks), so a new
// Launcher on the same host decides exactly as the old one would have. In
// memory it keeps only what it publishes (the last status of each VMI, for
// Watch) and the locks that serialize work on one VMI.
type Launcher struct {
	cfg Config
	log *slog.Logger

	// ctx ends the background goroutines; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool
	// closeMu orders the calls' wg.Add before Close's wg.Wait.
	closeMu sync.RWMutex

	// connMu guards the connections. Calls into libvirt hold it for
	// reading (see do); replacing lost connections holds it for writing.
	connMu    sync.RWMutex
	conns     conns         // both nil while disconnected
	gen       uint64        // generation of conns, counts connections
	connReady chan struct{} // closed while conns are set
	callbacks []int         // domain event callback ids on conns.mon
	lost      chan uint64   // generations reported lost

	// facts are the host facts, probed once per connection.
	factsMu sync.Mutex
	facts   *hostFacts
	// warnedHealth is set once the host's health was checked (hosthealth.go).
	warnedHealth atomic.Bool

	storeState // the image store (images.go)

	vmisMu sync.Mutex
	vmis   map[string]*vmiState // by domain name: the VMIs this launcher owns
	// deletes counts the Deletes begun, by domain name, so that a Sync
	// that Delete overtook makes nothing (see Sync). Guarded by vmisMu;
	// one small entry per name ever deleted.
	deletes map[string]uint64

	events eventQueue

	// plans counts the plans made (Plan and Sync make one each).
	plans atomic.Uint64
	// readings counts the full readings of a domain for its status
	// (observe: its state and live XML).
	readings atomic.Uint64

	subsMu sync.Mutex
	subs   map[*subscriber]struct{}
}

// vmiState is what the launcher keeps in memory of a VMI it owns: the lock
// that serializes the calls that change it, and what it last published.
type vmiState struct {
	name            string // libvirt domain name, <namespace>_<name>
	namespace, vmi  string
	uid             atomicUID
	lock            chan struct{} // held by Sync, Shutdown, Delete and the actions (see acquire)
	refreshPending  atomic.Bool   // a refresh is queued and not yet begun
	hintTime        atomic.Int64  // time of the first libvirt event it answers
	agentConnected  atomic.Bool   // the guest agent is connected
	metricsServed   atomic.Bool   // a goroutine serves its downward metrics channel (downwardmetrics.go)
	deadlineTimerMu sync.Mutex
	deadlineTimer   *time.Timer // destroys the domain when a graceful shutdown's deadline passes

	// mu serializes reading the VMI's state and publishing it, so the
	// published statuses follow the order in which they were read.
	mu        sync.Mutex
	status    v1.VirtualMachineInstanceStatus
	published bool
	observed  time.Time // when status was read
	// starting is set while this launcher starts the domain: its started
	// mark is pending because of this process, not a dead one.
	starting bool
	// startLost is set from this launcher's first write of a pending
	// start until the start's outcome is recorded: when a call fails in
	// between (the connection was lost), libvirtd may have started the
	// domain, may still be starting it, or never received the calls. The
	// next Sync finds out (startOrResume); until then the mark is
	// pending because of this process, as while starting.
	startLost bool
	deleted   bool
	// incoming is set while its domain is a migration's target still
	// receiving (hostplan.Incoming): if it goes, the guest never arrived.
	incoming bool
	// readEvents and readGen are the events count and the connection's
	// generation of the last reading of the domain that published: while
	// they hold, status is current (List), and so are last's state, live
	// XML and marks (Status, observeAgain). last holds no guest facts.
	readEvents, readGen uint64
	last                hostplan.Snapshot

	steadyState // steady.go
}

// atomicUID is a VMI UID read and written concurrently.
type atomicUID struct{ v atomic.Value }

func (a *atomicUID) Load() types.UID {
	u, _ := a.v.Load().(types.UID)
	return u
}

func (a *atomicUID) Store(u types.UID) { a.v.Store(u) }

// acquire takes the VMI's lock, giving up when ctx ends.
func (st *vmiState) acquire(ctx context.Context) error {
	select {
	case st.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// release gives the VMI's lock back.
func (st *vmiState) release() { <-st.lock }

// key is the VMI's namespace/name.
func (st *vmiState) key() string { return st.namespace + "/" + st.vmi }

// startPending tells whether this process accounts for the domain's
// pending started mark: it is starting the domain, or lost its call to.
// st.mu must be held.
func (st *vmiState) startPending() bool { return st.starting || st.startLost }

// isPublished tells whether a status of st was published.
func (st *vmiState) isPublished() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.published
}

// isStartLost tells whether st's start was lost and is not settled yet.
func (st *vmiState) isStartLost() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.startLost
}

// setStartLost records whether st's start is lost (vmiState.startLost).
func (st *vmiState) setStartLost(lost bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.startLost = lost
}

// isDeleted tells whether Delete retired st.
func (st *vmiState) isDeleted() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.deleted
}

var (
	eventLoopOnce sync.Once
	eventLoopErr  error
)

// startEventLoop registers libvirt's default event loop implementation,
// once per process and before the first connection, and runs it in one
// goroutine for the life of the process.
func startEventLoop() error {
	eventLoopOnce.Do(func() {
		if err := libvirt.EventRegisterDefaultImpl(); err != nil {
			eventLoopErr = wrapErr(err, "register libvirt event loop")
			return
		}
		go func() {
			for {
				if err := libvirt.EventRunDefaultImpl(); err != nil {
					time.Sleep(10 * time.Millisecond)
				}
			}
		}()
	})
	return eventLoopErr
}

// New connects to libvirt and returns a Launcher. It adopts every domain
// its owner (Config.Owner) defined before — a launcher restarted on the
// same host carries on with its VMIs: their statuses are published (Watch
// delivers them without a Sync) and a graceful shutdown under way keeps its
// deadline. The connection is watched: when it is lost the launcher
// reconnects with backoff, re-registers its event callbacks and refreshes
// the status of every VMI it owns. ctx bounds New's own work.
func New(ctx context.Context, cfg Config) (*Launcher, error) {
	cfg = cfg.withDefaults()
	if err := startEventLoop(); err != nil {
		return nil, err
	}
	l := &Launcher{
		cfg:       cfg,
		log:       cfg.Logger,
		connReady: make(chan struct{}),
		lost:      make(chan uint64, 4),
		vmis:      map[string]*vmiState{},
		subs:      map[*subscriber]struct{}{},
	}
	l.events.init()
	if err := cfg.check(); err != nil {
		return nil, err
	}
	c, err := l.connect(ctx)
	if err != nil {
		return nil, err
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.install(c)
	l.wg.Add(2)
	go l.reconnectLoop()
	go l.dispatchLoop()
	if err := l.adopt(ctx); err != nil {
		_ = l.Close()
		return nil, err
	}
	return l, nil
}

// Owner is the name this launcher records in the domains it defines
// (Config.Owner, or the host's name).
func (l *Launcher) Owner() string { return l.cfg.Owner }

// Close stops watching, ends every Watch channel and closes the
// connection. The domains keep running.
func (l *Launcher) Close() error {
	l.closeMu.Lock()
	first := l.closed.CompareAndSwap(false, true)
	l.closeMu.Unlock()
	if !first {
		return nil
	}
	l.cancel()
	l.wg.Wait()
	l.connMu.Lock()
	defer l.connMu.Unlock()
	l.teardown()
	return nil
}

// conns are the launcher's two connections to libvirt: ctl for the calls
// that change domains (define, start, stop — some take seconds), mon for
// events and status reads, so reading a state never queues behind a start
// (libvirtd serves a bounded number of calls per connection at once).
type conns struct {
	ctl, mon *libvirt.Connect
}

// connect opens both connections, giving up when ctx ends (libvirt's own
// connect cannot be interrupted: it may hang on a daemon that accepts but
// does not answer; a late connection is then closed). It does not install
// them.
func (l *Launcher) connect(ctx context.Context) (conns, error) {
	if err := ctx.Err(); err != nil {
		return conns{}, err
	}
	type result struct {
		cs  conns
		err error
	}
	ch := make(chan result, 1)
	go func() {
		cs, err := l.dial()
		ch <- result{cs, err}
	}()
	select {
	case r := <-ch:
		return r.cs, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.err == nil {
				r.cs.close()
			}
		}()
		return conns{}, fmt.Errorf("%w: connect to %s: %w", ErrUnavailable, l.cfg.URI, ctx.Err())
	}
}

// dial opens both connections.
func (l *Launcher) dial() (conns, error) {
	ctl, err := libvirt.NewConnect(l.cfg.URI)
	if err != nil {
		return conns{}, unavailable(wrapErr(err, "connect to %s", l.cfg.URI))
	}
	mon, err := libvirt.NewConnect(l.cfg.URI)
	if err != nil {
		_, _ = ctl.Close()
		return conns{}, unavailable(wrapErr(err, "connect to %s", l.cfg.URI))
	}
	return conns{ctl: ctl, mon: mon}, nil
}

// close closes both connections.
func (cs conns) close() {
	for _, c := range []*libvirt.Connect{cs.ctl, cs.mon} {
		if c != nil {
			_, _ = c.Close()
		}
	}
}

// install makes cs the launcher's connections: a close callback (and
// keepalive, when configured) on both, domain event callbacks on mon.
func (l *Launcher) install(cs conns) {
	l.connMu.Lock()
	defer l.connMu.Unlock()
	l.gen++
	gen := l.gen
	for _, c := range []*libvirt.Connect{cs.ctl, cs.mon} {
		if l.cfg.KeepAliveInterval > 0 {
			interval := max(int(l.cfg.KeepAliveInterval/time.Second), 1)
			if err := c.SetKeepAlive(interval, l.cfg.KeepAliveCount); err != nil {
				l.log.Warn("libvirt keepalive not set", "err", err)
			}
		}
		if err := c.RegisterCloseCallback(func(_ *libvirt.Connect, reason libvirt.ConnectCloseReason) {
			l.markLost(gen)
		}); err != nil {
			l.log.Warn("libvirt close callback not registered", "err", err)
		}
	}
	l.callbacks = nil
	// Every event below is a hint that the domain changed: its lifecycle,
	// its guest agent, a device added or removed live (its live XML: for
	// the steady state, steady.go, and the last reading, observeAgain),
	// its metadata (the marks). Without lifecycle events the launcher
	// cannot follow its domains: that failure is an error.
	hint := func(_ *libvirt.Connect, d *libvirt.Domain) { l.hint(d) }
	for _, ev := range []struct {
		what     string
		register func() (int, error)
	}{
		{"lifecycle", func() (int, error) {
			return cs.mon.DomainEventLifecycleRegister(nil, func(c *libvirt.Connect, d *libvirt.Domain, _ *libvirt.DomainEventLifecycle) { hint(c, d) })
		}},
		{"agent", func() (int, error) {
			return cs.mon.DomainEventAgentLifecycleRegister(nil, func(c *libvirt.Connect, d *libvirt.Domain, _ *libvirt.DomainEventAgentLifecycle) { hint(c, d) })
		}},
		{"device-added", func() (int, error) {
			return cs.mon.DomainEventDeviceAddedRegister(nil, func(c *libvirt.Connect, d *libvirt.Domain, _ *libvirt.DomainEventDeviceAdded) { hint(c, d) })
		}},
		{"device-removed", func() (int, error) {
			return cs.mon.DomainEventDeviceRemovedRegister(nil, func(c *libvirt.Connect, d *libvirt.Domain, _ *libvirt.DomainEventDeviceRemoved) { hint(c, d) })
		}},
		{"metadata", func() (int, error) {
			return cs.mon.DomainEventMetadataChangeRegister(nil, func(c *libvirt.Connect, d *libvirt.Domain, _ *libvirt.DomainEventMetadataChange) { hint(c, d) })
		}},
	} {
		id, err := ev.register()
		switch {
		case err == nil:
			l.callbacks = append(l.callbacks, id)
		case ev.what == "lifecycle":
			l.log.Error("libvirt lifecycle events not registered", "err", err)
		default:
			l.log.Warn("libvirt "+ev.what+" events not registered", "err", err)
		}
	}
	l.conns = cs
	l.facts = nil
	close(l.connReady)
	l.log.Info("connected to libvirt", "uri", l.cfg.URI, "generation", gen)
}

// teardown drops the current connections. connMu must be held for writing.
func (l *Launcher) teardown() {
	if l.conns.ctl == nil {
		return
	}
	for _, id := range l.callbacks {
		_ = l.conns.mon.DomainEventDeregister(id)
	}
	l.callbacks = nil
	for _, c := range []*libvirt.Connect{l.conns.ctl, l.conns.mon} {
		_ = c.UnregisterCloseCallback()
		_, _ = c.Close()
	}
	l.conns = conns{}
	l.connReady = make(chan struct{})
}

// markLost reports connection generation gen as lost. It never blocks: it
// is called from libvirt's event loop.
func (l *Launcher) markLost(gen uint64) {
	select {
	case l.lost <- gen:
	default:
	}
}

// connectionLost tells whether a call on the connection of generation gen
// failed because the connection is gone (the call failed in a way that
// may mean so and the connection is not alive), and then reports it lost.
func (l *Launcher) connectionLost(c *libvirt.Connect, gen uint64, err error) bool {
	if !mayBeConnectionLoss(err) {
		return false
	}
	if alive, aerr := c.IsAlive(); aerr != nil || !alive {
		l.markLost(gen)
		return true
	}
	return false
}

// reconnectLoop replaces lost connections until the launcher closes.
func (l *Launcher) reconnectLoop() {
	defer l.wg.Done()
	for {
		var gen uint64
		select {
		case <-l.ctx.Done():
			return
		case gen = <-l.lost:
		}
		l.connMu.Lock()
		if gen != l.gen || l.conns.ctl == nil {
			l.connMu.Unlock()
			continue
		}
		l.log.Warn("libvirt connection lost; reconnecting", "uri", l.cfg.URI)
		l.teardown()
		l.connMu.Unlock()

		backoff := l.cfg.ReconnectMin
		for {
			c, err := l.connect(l.ctx)
			if err == nil {
				l.install(c)
				break
			}
			l.log.Debug("reconnect failed", "err", err, "retry in", backoff)
			select {
			case <-l.ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, l.cfg.ReconnectMax)
		}
		l.resync()
	}
}

// resync refreshes the status of every owned VMI after a reconnection:
// whatever happened while the connection was down is published now.
func (l *Launcher) resync() {
	for _, st := range l.states() {
		l.scheduleRefresh(st, time.Time{})
	}
}

// do runs fn with the control connection, waiting for one while the
// launcher reconnects (bounded by ctx). fn must not call do or read.
func (l *Launcher) do(ctx context.Context, fn func(c *libvirt.Connect) error) error {
	return l.with(ctx, false, fn)
}

// read runs fn with the monitoring connection, for calls that only read.
func (l *Launcher) read(ctx context.Context, fn func(c *libvirt.Connect) error) error {
	return l.with(ctx, true, fn)
}

func (l *Launcher) with(ctx context.Context, mon bool, fn func(c *libvirt.Connect) error) error {
	for {
		if l.closed.Load() {
			return ErrClosed
		}
		l.connMu.RLock()
		c, gen, ready := l.conns.ctl, l.gen, l.connReady
		if mon {
			c = l.conns.mon
		}
		if c != nil {
			err := fn(c)
			l.connMu.RUnlock()
			if l.connectionLost(c, gen, err) {
				err = unavailable(err)
			}
			return err
		}
		l.connMu.RUnlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return fmt.Errorf("%w: not connected to %s: %w", ErrUnavailable, l.cfg.URI, ctx.Err())
		case <-l.ctx.Done():
			return ErrClosed
		}
	}
}

// states returns the owned VMIs' states.
func (l *Launcher) states() []*vmiState {
	l.vmisMu.Lock()
	defer l.vmisMu.Unlock()
	out := make([]*vmiState, 0, len(l.vmis))
	for _, st := range l.vmis {
		out = append(out, st)
	}
	return out
}

// lookupState returns the state of a domain name, or nil.
func (l *Launcher) lookupState(name string) *vmiState {
	l.vmisMu.Lock()
	defer l.vmisMu.Unlock()
	return l.vmis[name]
}

// stateFor returns the state of the VMI namespace/name, making one for a
// VMI not known yet. uid, when set, is recorded for a VMI known without
// one; a known VMI's UID is its domain's (see publish), not the caller's:
// a later VMI of the same name, refused while the earlier one's domain
// exists, does not relabel the earlier one's events.
func (l *Launcher) stateFor(namespace, name string, uid types.UID) *vmiState {
	if namespace == "" {
		namespace = "default"
	}
	dn := namespace + "_" + name
	l.vmisMu.Lock()
	defer l.vmisMu.Unlock()
	st := l.vmis[dn]
	if st == nil {
		st = &vmiState{name: dn, namespace: namespace, vmi: name, lock: make(chan struct{}, 1)}
		l.vmis[dn] = st
	}
	if uid != "" && st.uid.Load() == "" {
		st.uid.Store(uid)
	}
	return st
}

// addWork counts a goroutine of a call in l.wg, or returns ErrClosed once
// Close began: closeMu orders the Add before Close's Wait.
func (l *Launcher) addWork() error {
	l.closeMu.RLock()
	defer l.closeMu.RUnlock()
	if l.closed.Load() {
		return ErrClosed
	}
	l.wg.Add(1)
	return nil
}

// bounded runs work holding st's lock, in a goroutine of its own, and
// returns its error — or ctx's as soon as ctx ends: a libvirt call cannot
// be interrupted, so work then stops at its next step (it is given ctx)
// and releases the lock when it returns. What it made stays consistent:
// every step is idempotent and recorded in libvirt.
func (l *Launcher) bounded(ctx context.Context, st *vmiState, work func(ctx context.Context) error) error {
	if err := st.acquire(ctx); err != nil {
		return err
	}
	if err := l.addWork(); err != nil {
		st.release()
		return err
	}
	done := make(chan error, 1)
	go func() {
		defer l.wg.Done()
		defer st.release()
		done <- work(ctx)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
