package streamconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// Conn is a console or VNC connection bound to a context: it closes when
// the context ends, and its Read and Write then say why (an error wrapping
// the context's). It is what the launcher's Console and VNC return.
type Conn struct {
	conn net.Conn
	what string // "console of default/tiny", for errors

	release func() // runs once, after conn is closed; may be nil

	once     sync.Once
	closeErr error

	mu        sync.Mutex
	cause     error       // why it was closed by something else than Close
	stopAfter func() bool // stops the context's AfterFunc (see bind)
}

// New makes a Conn of conn, named what in its errors ("console of
// default/tiny"); release, when not nil, runs once after conn is closed.
func New(conn net.Conn, what string, release func()) *Conn {
	return &Conn{conn: conn, what: what, release: release}
}

// Bind closes the stream when ctx ends.
func (s *Conn) Bind(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() {
		s.CloseWith(fmt.Errorf("launcher: %s: %w", s.what, context.Cause(ctx)))
	})
	s.mu.Lock()
	s.stopAfter = stop
	s.mu.Unlock()
}

// Read reads what the guest sent. It returns io.EOF when the guest's side
// closed (QEMU exited), and after the stream's context ended an error that
// wraps the context's.
func (s *Conn) Read(p []byte) (int, error) {
	n, err := s.conn.Read(p)
	return n, s.explain(err)
}

// Write sends p to the guest.
func (s *Conn) Write(p []byte) (int, error) {
	n, err := s.conn.Write(p)
	return n, s.explain(err)
}

// Close closes the stream; a second Close does nothing.
func (s *Conn) Close() error {
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

// CloseWith closes the stream because of cause, which its Read and Write
// return from then on. It returns once the stream is closed.
func (s *Conn) CloseWith(cause error) {
	s.mu.Lock()
	if s.cause == nil {
		s.cause = cause
	}
	s.mu.Unlock()
	_ = s.Close()
}

// explain turns a read or write error into the stream's: the cause it was
// closed for, io.EOF as is, anything else named after the stream.
func (s *Conn) explain(err error) error {
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
