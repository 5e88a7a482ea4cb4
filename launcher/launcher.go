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

	// connMu guards the connection. Calls into libvirt hold it for reading
	// (see do); replacing a lost connection holds it for writing.
	connMu    sync.RWMutex
	conn      *libvirt.Connect // nil while disconnected
	gen       uint64           // generation of conn, counts connections
	connReady chan struct{}    // closed while conn is set
	callbacks []int            // domain event callback ids on conn
	lost      chan uint64      // generations reported lost

	// facts are the host facts, probed once per connection.
	factsMu sync.Mutex
	facts   *hostFacts
	// noMemoryHotplug is set once libvirt refused a <maxMemory>.
	noMemoryHotplug atomic.Bool

	vmisMu sync.Mutex
	vmis   map[string]*record // by domain name

	events eventQueue

	subsMu sync.Mutex
	subs   map[*subscriber]struct{}
}

// record is what the launcher keeps of each VMI it manages.
type record struct {
	// syncMu serializes Sync, Stop and Delete of the VMI.
	syncMu sync.Mutex

	// mu serializes reading the VMI's state and publishing it, so the
	// published statuses follow the order in which they were read.
	mu        sync.Mutex
	vmi       *v1.VirtualMachineInstance // defaulted copy
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

// connect opens a connection and sets it up: keepalive, close callback and
// domain event callbacks. It does not install it.
func (l *Launcher) connect(ctx context.Context) (*libvirt.Connect, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c, err := libvirt.NewConnect(l.cfg.URI)
	if err != nil {
		return nil, wrapErr(err, "connect to %s", l.cfg.URI)
	}
	return c, nil
}

// install makes c the launcher's connection and registers its callbacks.
func (l *Launcher) install(c *libvirt.Connect) {
	l.connMu.Lock()
	defer l.connMu.Unlock()
	l.gen++
	gen := l.gen
	interval := int(l.cfg.KeepAliveInterval / time.Second)
	if interval < 1 {
		interval = 1
	}
	if err := c.SetKeepAlive(interval, l.cfg.KeepAliveCount); err != nil {
		l.log.Warn("libvirt keepalive not set", "err", err)
	}
	if err := c.RegisterCloseCallback(func(_ *libvirt.Connect, reason libvirt.ConnectCloseReason) {
		l.markLost(gen)
	}); err != nil {
		l.log.Warn("libvirt close callback not registered", "err", err)
	}
	l.callbacks = nil
	if id, err := c.DomainEventLifecycleRegister(nil, func(_ *libvirt.Connect, d *libvirt.Domain, ev *libvirt.DomainEventLifecycle) {
		l.hint(d)
	}); err == nil {
		l.callbacks = append(l.callbacks, id)
	} else {
		l.log.Error("libvirt lifecycle events not registered", "err", err)
	}
	if id, err := c.DomainEventAgentLifecycleRegister(nil, func(_ *libvirt.Connect, d *libvirt.Domain, ev *libvirt.DomainEventAgentLifecycle) {
		l.hint(d)
	}); err == nil {
		l.callbacks = append(l.callbacks, id)
	} else {
		l.log.Warn("libvirt agent events not registered", "err", err)
	}
	l.conn = c
	l.facts = nil
	close(l.connReady)
	l.log.Info("connected to libvirt", "uri", l.cfg.URI, "generation", gen)
}

// teardown drops the current connection. connMu must be held for writing.
func (l *Launcher) teardown() {
	if l.conn == nil {
		return
	}
	for _, id := range l.callbacks {
		_ = l.conn.DomainEventDeregister(id)
	}
	l.callbacks = nil
	_ = l.conn.UnregisterCloseCallback()
	_, _ = l.conn.Close()
	l.conn = nil
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
		if gen != l.gen || l.conn == nil {
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

// do runs fn with the current connection, waiting for one while the
// launcher reconnects (bounded by ctx). fn must not call do.
func (l *Launcher) do(ctx context.Context, fn func(c *libvirt.Connect) error) error {
	for {
		if l.closed.Load() {
			return ErrClosed
		}
		l.connMu.RLock()
		c, gen, ready := l.conn, l.gen, l.connReady
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
