package launcher

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"
)

// Launcher runs VMIs on one libvirt connection. Create it with New; all its
// methods are safe for concurrent use. Close releases it.
type Launcher struct {
	cfg Config
	log *slog.Logger

	// ctx ends the background goroutines; Close cancels it.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool

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
	// noMemoryHotplug is set once libvirt refused a <maxMemory>.
	noMemoryHotplug atomic.Bool
	// warnedHealth is set once the host's health was checked (hosthealth.go).
	warnedHealth atomic.Bool

	vmisMu sync.Mutex
	vmis   map[string]*record // by domain name
	// deletes counts the Deletes begun, by domain name, so that a Sync
	// that Delete overtook makes nothing (see Sync). Guarded by vmisMu;
	// one small entry per name ever deleted.
	deletes map[string]uint64

	events eventQueue

	subsMu sync.Mutex
	subs   map[*subscriber]struct{}
}

// record is what the launcher keeps of each VMI it manages.
type record struct {
	nsName string // namespace/name, set at creation

	// syncMu serializes Sync, Stop and Delete of the VMI.
	syncMu sync.Mutex

	// mu serializes reading the VMI's state and publishing it, so the
	// published statuses follow the order in which they were read.
	mu        sync.Mutex
	vmi       *v1.VirtualMachineInstance // defaulted copy, replaced by Sync
	status    v1.VirtualMachineInstanceStatus
	published bool
	observed  time.Time // when status was read
	// started tells whether the domain has run for this VMI.
	started bool
	deleted bool

	// refreshPending is set while a refresh is queued and not yet begun;
	// hintTime is the time of the first libvirt event it answers.
	refreshPending atomic.Bool
	hintTime       atomic.Int64
	// agentConnected is set while the guest agent is connected.
	agentConnected atomic.Bool
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

// New connects to libvirt and returns a Launcher. The connection is
// watched: when it is lost the launcher reconnects with backoff,
// re-registers its event callbacks and refreshes the status of every VMI it
// manages. ctx bounds only the first connection.
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
		vmis:      map[string]*record{},
		subs:      map[*subscriber]struct{}{},
	}
	l.events.init()
	c, err := l.connect(ctx)
	if err != nil {
		return nil, err
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.install(c)
	l.wg.Add(2)
	go l.reconnectLoop()
	go l.dispatchLoop()
	return l, nil
}

// Close stops watching, ends every Watch channel and closes the
// connection. The domains keep running.
func (l *Launcher) Close() error {
	if !l.closed.CompareAndSwap(false, true) {
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
		return conns{}, fmt.Errorf("launcher: connect to %s: %w", l.cfg.URI, ctx.Err())
	}
}

// dial opens both connections.
func (l *Launcher) dial() (conns, error) {
	ctl, err := libvirt.NewConnect(l.cfg.URI)
	if err != nil {
		return conns{}, wrapErr(err, "connect to %s", l.cfg.URI)
	}
	mon, err := libvirt.NewConnect(l.cfg.URI)
	if err != nil {
		_, _ = ctl.Close()
		return conns{}, wrapErr(err, "connect to %s", l.cfg.URI)
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

// install makes cs the launcher's connections: keepalive and a close
// callback on both, domain event callbacks on mon.
func (l *Launcher) install(cs conns) {
	l.connMu.Lock()
	defer l.connMu.Unlock()
	l.gen++
	gen := l.gen
	interval := int(l.cfg.KeepAliveInterval / time.Second)
	if interval < 1 {
		interval = 1
	}
	for _, c := range []*libvirt.Connect{cs.ctl, cs.mon} {
		if err := c.SetKeepAlive(interval, l.cfg.KeepAliveCount); err != nil {
			l.log.Warn("libvirt keepalive not set", "err", err)
		}
		if err := c.RegisterCloseCallback(func(_ *libvirt.Connect, reason libvirt.ConnectCloseReason) {
			l.markLost(gen)
		}); err != nil {
			l.log.Warn("libvirt close callback not registered", "err", err)
		}
	}
	l.callbacks = nil
	if id, err := cs.mon.DomainEventLifecycleRegister(nil, func(_ *libvirt.Connect, d *libvirt.Domain, ev *libvirt.DomainEventLifecycle) {
		l.hint(d)
	}); err == nil {
		l.callbacks = append(l.callbacks, id)
	} else {
		l.log.Error("libvirt lifecycle events not registered", "err", err)
	}
	if id, err := cs.mon.DomainEventAgentLifecycleRegister(nil, func(_ *libvirt.Connect, d *libvirt.Domain, ev *libvirt.DomainEventAgentLifecycle) {
		l.hint(d)
	}); err == nil {
		l.callbacks = append(l.callbacks, id)
	} else {
		l.log.Warn("libvirt agent events not registered", "err", err)
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

// checkConnection reports the connection of generation gen as lost when a
// call on it failed in a way that may mean so and it is not alive.
func (l *Launcher) checkConnection(c *libvirt.Connect, gen uint64, err error) {
	if !mayBeConnectionLoss(err) {
		return
	}
	if alive, aerr := c.IsAlive(); aerr != nil || !alive {
		l.markLost(gen)
	}
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

// resync refreshes the status of every managed VMI after a reconnection:
// whatever happened while the connection was down is published now.
func (l *Launcher) resync() {
	for _, rec := range l.records() {
		l.scheduleRefresh(rec, time.Time{})
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
			l.checkConnection(c, gen, err)
			return err
		}
		l.connMu.RUnlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return fmt.Errorf("%w: %w", errNotConnected, ctx.Err())
		case <-l.ctx.Done():
			return ErrClosed
		}
	}
}

// records returns the managed VMIs' records.
func (l *Launcher) records() []*record {
	l.vmisMu.Lock()
	defer l.vmisMu.Unlock()
	recs := make([]*record, 0, len(l.vmis))
	for _, r := range l.vmis {
		recs = append(recs, r)
	}
	return recs
}

// lookupRecord returns the record of a domain name, or nil.
func (l *Launcher) lookupRecord(name string) *record {
	l.vmisMu.Lock()
	defer l.vmisMu.Unlock()
	return l.vmis[name]
}
