package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// ErrNotRunning is returned by Console and VNC for a VMI whose domain is
// defined but not running (not started yet, or ended). Retrying can
// succeed once it runs.
var ErrNotRunning = errors.New("launcher: the VMI is not running")

// stream is a console or VNC connection bound to a context: it closes when
// the context ends, and its Read and Write then say why (an error wrapping
// the context's). It is what Console and VNC return.
type stream struct {
	conn net.Conn
	what string // "console of default/tiny", for errors

	release func() // runs once, after conn is closed; may be nil

	once     sync.Once
	closeErr error

	mu        sync.Mutex
	cause     error       // why it was closed by something else than Close
	stopAfter func() bool // stops the context's AfterFunc (see bind)
}

// newStream makes a stream of conn; release, when not nil, runs once
// after conn is closed.
func newStream(conn net.Conn, what string, release func()) *stream {
	return &stream{conn: conn, what: what, release: release}
}

// bind closes the stream when ctx ends.
func (s *stream) bind(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() {
		s.closeWith(fmt.Errorf("launcher: %s: %w", s.what, context.Cause(ctx)))
	})
	s.mu.Lock()
	s.stopAfter = stop
	s.mu.Unlock()
}

// Read reads what the guest sent. It returns io.EOF when the guest's side
// closed (QEMU exited), and after the stream's context ended an error that
// wraps the context's.
func (s *stream) Read(p []byte) (int, error) {
	n, err := s.conn.Read(p)
	return n, s.explain(err)
}

// Write sends p to the guest.
func (s *stream) Write(p []byte) (int, error) {
	n, err := s.conn.Write(p)
	return n, s.explain(err)
}

// Close closes the stream; a second Close does nothing.
func (s *stream) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		stop := s.stopAfter
		s.mu.Unlock()
		if stop != nil {
			stop()
		}
		s.closeErr = s.conn.Close()
		if s.release != nil {
			s.release()
		}
	})
	return s.closeErr
}

// closeWith closes the stream because of cause, which its Read and Write
// return from then on. It returns once the stream is closed.
func (s *stream) closeWith(cause error) {
	s.mu.Lock()
	if s.cause == nil {
		s.cause = cause
	}
	s.mu.Unlock()
	_ = s.Close()
}

// explain turns a read or write error into the stream's: the cause it was
// closed for, io.EOF as is, anything else named after the stream.
func (s *stream) explain(err error) error {
	if err == nil {
		return nil
	}
	s.mu.Lock()
	cause := s.cause
	s.mu.Unlock()
	switch {
	case cause != nil:
		return cause
	case errors.Is(err, io.EOF):
		return io.EOF
	}
	return fmt.Errorf("launcher: %s: %w", s.what, err)
}

// openStream runs open in a goroutine of its own and returns its stream,
// or ctx's error as soon as ctx ends: a libvirt call cannot be interrupted.
// A stream that open returns after that is closed.
func (l *Launcher) openStream(ctx context.Context, open func(ctx context.Context) (*stream, error)) (io.ReadWriteCloser, error) {
	if err := l.addWork(); err != nil {
		return nil, err
	}
	type result struct {
		s   *stream
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer l.wg.Done()
		s, err := open(ctx)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, r.err
		}
		return r.s, nil
	case <-ctx.Done():
		go func() {
			if r := <-done; r.s != nil {
				_ = r.s.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// runningDomain reads the domain of vmi (only its namespace and name are
// used) and refuses one that is not there (ErrNoDomain), not this
// launcher's (*ConflictError) or not running (ErrNotRunning). fn runs on
// the domain, with what was read, on the control connection.
func (l *Launcher) runningDomain(ctx context.Context, vmi *v1.VirtualMachineInstance, fn func(dom *libvirt.Domain, cur currentDomain) error) error {
	name := convert.DomainName(vmi)
	return l.owned(ctx, name, func(dom *libvirt.Domain, cur currentDomain) error {
		if !cur.state.Active() {
			return fmt.Errorf("%w: domain %s is %s", ErrNotRunning, name, cur.state)
		}
		return fn(dom, cur)
	})
}

// vmiKey is the VMI's namespace/name, with the default namespace when it
// has none.
func vmiKey(vmi *v1.VirtualMachineInstance) string {
	ns := vmi.Namespace
	if ns == "" {
		ns = "default"
	}
	return ns + "/" + vmi.Name
}
