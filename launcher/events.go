package launcher

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"libvirt.org/go/libvirt"
)

// eventQueue carries libvirt's domain events from the event loop to the
// launcher. Putting never blocks: an event that does not fit the channel is
// counted as a drop and its domain is remembered in an overflow set, so its
// state is still re-read — only the copy of the event is lost, never the
// VMI's latest state.
type eventQueue struct {
	ch       chan hintMsg
	kick     chan struct{}
	mu       sync.Mutex
	overflow map[string]time.Time
	drops    atomic.Uint64
}

// hintMsg says that domain name had an event at time at.
type hintMsg struct {
	name string
	at   time.Time
}

// eventQueueSize is the capacity of the event channel.
const eventQueueSize = 1024

func (q *eventQueue) init() {
	q.ch = make(chan hintMsg, eventQueueSize)
	q.kick = make(chan struct{}, 1)
	q.overflow = map[string]time.Time{}
}

// put queues an event of domain name without blocking.
func (q *eventQueue) put(name string, at time.Time) {
	select {
	case q.ch <- hintMsg{name, at}:
		return
	default:
	}
	q.drops.Add(1)
	q.mu.Lock()
	if _, ok := q.overflow[name]; !ok {
		q.overflow[name] = at
	}
	q.mu.Unlock()
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// takeOverflow returns and clears the overflow set.
func (q *eventQueue) takeOverflow() map[string]time.Time {
	q.mu.Lock()
	defer q.mu.Unlock()
	o := q.overflow
	q.overflow = map[string]time.Time{}
	return o
}

// DroppedEvents returns how many libvirt events did not fit the launcher's
// event channel. Their domains' states were re-read all the same.
func (l *Launcher) DroppedEvents() uint64 {
	return l.events.drops.Load()
}

// hint is called from libvirt's event loop for every event of domain d. It
// copies what it needs and returns at once.
func (l *Launcher) hint(d *libvirt.Domain) {
	at := time.Now()
	name, err := d.GetName()
	if err != nil {
		return
	}
	l.events.put(name, at)
}

// dispatchLoop turns queued events into status refreshes of the VMIs they
// concern, and re-reads the VMIs whose guest agent is connected every
// AgentPollInterval: the agent's news (addresses, guest OS) comes with no
// libvirt event.
func (l *Launcher) dispatchLoop() {
	defer l.wg.Done()
	var poll <-chan time.Time
	if l.cfg.AgentPollInterval > 0 {
		t := time.NewTicker(l.cfg.AgentPollInterval)
		defer t.Stop()
		poll = t.C
	}
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-poll:
			for _, st := range l.states() {
				if st.agentConnected.Load() {
					l.scheduleRefresh(st, time.Time{})
				}
			}
		case h := <-l.events.ch:
			if st := l.lookupState(h.name); st != nil {
				st.events.Add(1)
				l.scheduleRefresh(st, h.at)
			}
		case <-l.events.kick:
			for name, at := range l.events.takeOverflow() {
				if st := l.lookupState(name); st != nil {
					st.events.Add(1)
					l.scheduleRefresh(st, at)
				}
			}
		}
	}
}

// scheduleRefresh re-reads st's state soon, in its own goroutine, unless a
// refresh is already queued (it will read the state after this event too).
// at is the time of the libvirt event that asked for it (zero for none).
// It is called only from the launcher's background goroutines.
func (l *Launcher) scheduleRefresh(st *vmiState, at time.Time) {
	if !at.IsZero() {
		st.hintTime.CompareAndSwap(0, at.UnixNano())
	}
	if !st.refreshPending.CompareAndSwap(false, true) {
		return
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		ctx, cancel := context.WithTimeout(l.ctx, 30*time.Second)
		defer cancel()
		st.refreshPending.Store(false)
		var at time.Time
		if ns := st.hintTime.Swap(0); ns != 0 {
			at = time.Unix(0, ns)
		}
		if _, err := l.publish(ctx, st, at, false, false); err != nil {
			l.log.Debug("status refresh failed", "vmi", st.key(), "err", err)
		}
	}()
}
