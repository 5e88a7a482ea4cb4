// Package fanout holds the queue behind each of the launcher's Watch
// channels: putting an event never blocks the one who publishes it, and a
// reader that falls behind loses the oldest queued events of a key, never
// the latest — a VMI's last status is always delivered.
package fanout

import "sync"

// Queue is one reader's queue of events of type E, each under a key (a
// VMI's namespace/name). The zero value is not usable: see New.
type Queue[E any] struct {
	max     int
	mu      sync.Mutex
	queue   []entry[E]
	perKey  map[string]int
	seen    map[string]bool
	kick    chan struct{}
	dropped int
}

type entry[E any] struct {
	key string
	ev  E
}

// New returns a queue that keeps at most max events of one key.
func New[E any](max int) *Queue[E] {
	return &Queue[E]{max: max, perKey: map[string]int{}, seen: map[string]bool{}, kick: make(chan struct{}, 1)}
}

// Offer queues ev under key without blocking. An initial event (the state
// of a key when the reader subscribed) is dropped when an event of its key
// was offered already, which is newer. When max events of the key wait,
// the oldest of them goes: the latest is always kept.
func (q *Queue[E]) Offer(key string, ev E, initial bool) {
	q.mu.Lock()
	if initial && q.seen[key] {
		q.mu.Unlock()
		return
	}
	q.seen[key] = true
	if q.perKey[key] >= q.max {
		for i := range q.queue {
			if q.queue[i].key == key {
				q.queue = append(q.queue[:i], q.queue[i+1:]...)
				q.perKey[key]--
				q.dropped++
				break
			}
		}
	}
	q.queue = append(q.queue, entry[E]{key, ev})
	q.perKey[key]++
	q.mu.Unlock()
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// Next takes the oldest queued event; false when there is none.
func (q *Queue[E]) Next() (E, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var zero E
	if len(q.queue) == 0 {
		return zero, false
	}
	e := q.queue[0]
	q.queue[0] = entry[E]{}
	q.queue = q.queue[1:]
	if q.perKey[e.key]--; q.perKey[e.key] == 0 {
		delete(q.perKey, e.key)
	}
	return e.ev, true
}

// Ready delivers a value when an event was offered since the last one it
// delivered: a reader waits on it once Next has emptied the queue.
func (q *Queue[E]) Ready() <-chan struct{} { return q.kick }

// Dropped returns how many events were dropped to keep the latest.
func (q *Queue[E]) Dropped() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.dropped
}
