package imagestore

import (
	"context"
	"sync"
)

// flights runs at most one call per key at a time: a caller asking for a
// key already in flight waits for that call's result instead of starting
// its own. The call runs under a context of its own that ends when every
// caller waiting for it has gone (each caller's ctx bounds only its own
// wait), and the last caller to go waits until the call has cleaned up.
type flights[T any] struct {
	mu sync.Mutex
	m  map[string]*flight[T]
}

type flight[T any] struct {
	done    chan struct{}
	val     T
	err     error
	waiters int
	cancel  context.CancelFunc
}

// do returns fn's result for key, running fn unless a call for key is in
// flight. On ctx's end it returns ctx.Err().
func (g *flights[T]) do(ctx context.Context, key string, fn func(context.Context) (T, error)) (T, error) {
	g.mu.Lock()
	if g.m == nil {
		g.m = map[string]*flight[T]{}
	}
	f, ok := g.m[key]
	if !ok {
		work, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f = &flight[T]{done: make(chan struct{}), cancel: cancel}
		g.m[key] = f
		go func() {
			v, err := fn(work)
			g.mu.Lock()
			if g.m[key] == f {
				delete(g.m, key)
			}
			f.val, f.err = v, err
			g.mu.Unlock()
			cancel()
			close(f.done)
		}()
	}
	f.waiters++
	g.mu.Unlock()

	select {
	case <-f.done:
		return f.val, f.err
	case <-ctx.Done():
	}
	g.mu.Lock()
	f.waiters--
	last := f.waiters == 0
	if last {
		// Nobody wants the result any more: stop the call, and let the
		// next caller start afresh rather than join a cancelled call.
		f.cancel()
		if g.m[key] == f {
			delete(g.m, key)
		}
	}
	g.mu.Unlock()
	if last {
		<-f.done
	}
	var zero T
	return zero, ctx.Err()
}
