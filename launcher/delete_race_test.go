package launcher

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestSyncOvertakenByDelete: a Sync that waits for a VMI's lock while a
// Delete of it holds the lock returns ErrDeleted once the Delete is done,
// and leaves the VMI unowned. (The check comes before any libvirt call,
// so no libvirtd is needed.)
func TestSyncOvertakenByDelete(t *testing.T) {
	l := &Launcher{vmis: map[string]*vmiState{}}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	defer l.cancel()
	st := l.stateFor("ns1", "racer", "")
	name := st.name

	// A Sync called just before a Delete: it reads the count of Deletes,
	// then Delete counts itself, takes the lock first and retires the VMI.
	deletes := l.deleteCount(name)
	if err := st.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		done <- l.bounded(context.Background(), st, func(ctx context.Context) error {
			if l.deleteCount(name) != deletes {
				l.forget(st)
				return ErrDeleted
			}
			return errors.New("the Sync went on")
		})
	}()
	time.Sleep(100 * time.Millisecond) // the Sync waits for the lock
	l.countDelete(name)
	l.forget(st)
	st.release()

	select {
	case err := <-done:
		if !errors.Is(err, ErrDeleted) {
			t.Fatalf("Sync overtaken by Delete: %v, want ErrDeleted", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Sync did not return")
	}
	if st := l.lookupState(name); st != nil {
		t.Errorf("the VMI is still owned after ErrDeleted")
	}
}

// TestBoundedReturnsWhenContextEnds: a call returns as soon as its context
// ends, even while its work is blocked (a libvirt call cannot be
// interrupted); the VMI's lock is released only when the work is done.
func TestBoundedReturnsWhenContextEnds(t *testing.T) {
	l := &Launcher{vmis: map[string]*vmiState{}}
	st := l.stateFor("ns", "slow", "")
	unblock := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := l.bounded(ctx, st, func(ctx context.Context) error {
		<-unblock
		return nil
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("bounded = %v, want the context's deadline", err)
	}
	busy, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if err := st.acquire(busy); err == nil {
		t.Fatal("the lock was free while the work still ran")
	}
	close(unblock)
	l.wg.Wait()
	if err := st.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	st.release()
}
