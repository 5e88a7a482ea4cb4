// Package streamtest holds what tests of a VMI's console and VNC streams
// share: a Transcript of what a stream gave, waited on for text, and
// TypeLine to type on a console. Its users are the launcher's tests and
// the node agent's, which reach the same streams through a port.
package streamtest

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// Transcript is what was read from a stream, until reading failed.
type Transcript struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	err     error         // what ended reading
	changed chan struct{} // something was read, or reading ended (capacity 1)
	done    chan struct{} // closed when reading ended
}

// ReadAll reads r into a new Transcript, in a goroutine of its own, until
// a read fails.
func ReadAll(r io.Reader) *Transcript {
	tr := &Transcript{changed: make(chan struct{}, 1), done: make(chan struct{})}
	go func() {
		defer close(tr.done)
		b := make([]byte, 4096)
		for {
			n, err := r.Read(b)
			tr.mu.Lock()
			tr.buf.Write(b[:n])
			if err != nil {
				tr.err = err
			}
			tr.mu.Unlock()
			select {
			case tr.changed <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return tr
}

// String returns what was read so far.
func (tr *Transcript) String() string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.buf.String()
}

// WaitFor waits until the transcript holds s at or after offset from, and
// returns the offset just past it. It fails the test when reading ends or
// timeout passes first, printing what was read.
func (tr *Transcript) WaitFor(t testing.TB, s string, from int, timeout time.Duration) int {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		text := tr.String()
		if i := strings.Index(text[from:], s); i >= 0 {
			return from + i + len(s)
		}
		select {
		case <-tr.changed:
		case <-tr.done:
			if text := tr.String(); !strings.Contains(text[from:], s) {
				t.Fatalf("stream ended (%v) without %q; it holds:\n%s", tr.err, s, text)
			}
		case <-timer.C:
			t.Fatalf("stream: no %q within %s; it holds:\n%s", s, timeout, tr.String())
		}
	}
}

// End waits until reading failed, and returns the error that ended it. It
// fails the test when the stream is still open after timeout.
func (tr *Transcript) End(t testing.TB, timeout time.Duration) error {
	t.Helper()
	select {
	case <-tr.done:
		return tr.err
	case <-time.After(timeout):
		t.Fatalf("stream still open after %s", timeout)
		return nil
	}
}

// TypeLine types a shell command on a console: line and a newline.
func TypeLine(t testing.TB, w io.Writer, line string) {
	t.Helper()
	if _, err := io.WriteString(w, line+"\n"); err != nil {
		t.Fatalf("type %q: %v", line, err)
	}
}
