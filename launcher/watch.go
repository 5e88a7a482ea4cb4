package launcher

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/internal/fanout"
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
	*fanout.Queue[Event]
	out chan Event
}

// offer queues ev (see fanout.Queue.Offer).
func (s subscriber) offer(ev Event, initial bool) {
	s.Offer(ev.Namespace+"/"+ev.Name, ev, initial)
}

// Watch returns a channel that delivers every status change of every VMI
// the launcher owns, as it happens, in the order the launcher saw them:
// first the current status of each owned VMI (those New adopted
// included), then each change, driven by libvirt's events and by the
// launcher's own calls. A reader that falls far
// behind loses intermediate changes of a VMI, never its latest status. The
// channel is closed when ctx ends or the launcher closes.
func (l *Launcher) Watch(ctx context.Context) <-chan Event {
	s := &subscriber{Queue: fanout.New[Event](maxQueuedPerVMI), out: make(chan Event)}
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
				ev, ok := s.Next()
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
			case <-s.Ready():
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
