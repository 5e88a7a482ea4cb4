package launcher

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
)

// Event is a status change of a VMI the launcher owns, as Watch delivers
// it.
type Event struct {
	Namespace, Name string
	UID             types.UID
	// Status is the VMI's status after the change.
	Status v1.VirtualMachineInstanceStatus
	// Deleted is set once the VMI was deleted (Delete); Status is its last.
	Deleted bool
	// Observed is when the launcher read the state reported in Status.
	Observed time.Time
	// LibvirtEvent is when libvirt's event loop delivered the event that
	// led to this change; zero when the change follows one of the
	// launcher's own calls or a resync.
	LibvirtEvent time.Time
}

// maxQueuedPerVMI bounds the events a slow Watch reader may have queued for
// one VMI; beyond it the oldest is dropped, never the latest.
const maxQueuedPerVMI = 32

// subscriber is one Watch channel with its queue. Publishing never blocks:
// events queue here and a goroutine hands them to the reader in order.
type subscriber struct {
	mu      sync.Mutex
	queue   []Event
	perVMI  map[string]int
	seen    map[string]bool
	kick    chan struct{}
	out     chan Event
	dropped int
}

func eventKey(ev *Event) string { return ev.Namespace + "/" + ev.Name }

// offer queues ev. When the reader is so slow that maxQueuedPerVMI events of
// the VMI wait, the oldest of them goes: the latest is always kept.
func (s *subscriber) offer(ev Event, initial bool) {
	k := eventKey(&ev)
	s.mu.Lock()
	if initial && s.seen[k] {
		s.mu.Unlock()
		return
	}
	s.seen[k] = true
	if s.perVMI[k] >= maxQueuedPerVMI {
		for i := range s.queue {
			if eventKey(&s.queue[i]) == k {
				s.queue = append(s.queue[:i], s.queue[i+1:]...)
				s.perVMI[k]--
				s.dropped++
				break
			}
		}
	}
	s.queue = append(s.queue, ev)
	s.perVMI[k]++
	s.mu.Unlock()
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// next takes the oldest queued event.
func (s *subscriber) next() (Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 {
		return Event{}, false
	}
	ev := s.queue[0]
	s.queue[0] = Event{}
	s.queue = s.queue[1:]
	k := eventKey(&ev)
	if s.perVMI[k]--; s.perVMI[k] == 0 {
		delete(s.perVMI, k)
	}
	return ev, true
}

// Watch returns a channel that delivers every status change of every VMI
// the launcher owns, as it happens, in the order the launcher saw them:
// first the current status of each owned VMI (those New adopted
// included), then each change, driven by libvirt's events and by the
// launcher's own calls. A reader that falls far
// behind loses intermediate changes of a VMI, never its latest status. The
// channel is closed when ctx ends or the launcher closes.
func (l *Launcher) Watch(ctx context.Context) <-chan Event {
	s := &subscriber{
		perVMI: map[string]int{},
		seen:   map[string]bool{},
		kick:   make(chan struct{}, 1),
		out:    make(chan Event),
	}
	if l.closed.Load() {
		close(s.out)
		return s.out
	}
	l.subsMu.Lock()
	l.subs[s] = struct{}{}
	l.subsMu.Unlock()
	for _, st := range l.states() {
		st.mu.Lock()
		if st.published && !st.deleted {
			s.offer(st.event(time.Time{}), true)
		}
		st.mu.Unlock()
	}
	go func() {
		defer close(s.out)
		defer func() {
			l.subsMu.Lock()
			delete(l.subs, s)
			l.subsMu.Unlock()
		}()
		for {
			for {
				ev, ok := s.next()
				if !ok {
					break
				}
				select {
				case s.out <- ev:
				case <-ctx.Done():
					return
				case <-l.ctx.Done():
					return
				}
			}
			select {
			case <-s.kick:
			case <-ctx.Done():
				return
			case <-l.ctx.Done():
				return
			}
		}
	}()
	return s.out
}

// broadcast offers ev to every Watch channel.
func (l *Launcher) broadcast(ev Event) {
	l.subsMu.Lock()
	defer l.subsMu.Unlock()
	for s := range l.subs {
		s.offer(ev, false)
	}
}
