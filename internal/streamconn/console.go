package streamconn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The errors of a console attachment (the launcher's ErrConsoleBusy and
// ErrTakenOver).
var (
	ErrConsoleBusy = errors.New("launcher: the console is attached elsewhere")
	ErrTakenOver   = errors.New("launcher: another attachment took the console over")
)

// consoles are this process's console attachments, by serial socket.
// attach is held while an attachment is made, so that a forced one and the
// one it takes over do not interleave; mu guards held.
var consoles = struct {
	attach sync.Mutex
	mu     sync.Mutex
	held   map[string]*Conn
}{held: map[string]*Conn{}}

// AttachConsole connects to the serial socket at socket, holding its lock file for
// as long as the stream is open. force takes the console over from an
// attachment of this process.
func AttachConsole(ctx context.Context, socket, what string, force bool) (*Conn, error) {
	consoles.attach.Lock()
	defer consoles.attach.Unlock()
	lock, err := os.OpenFile(socket+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("launcher: %s: %w", what, err)
	}
	err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		consoles.mu.Lock()
		holder := consoles.held[socket]
		consoles.mu.Unlock()
		switch {
		case holder == nil:
			err = fmt.Errorf("%w: %s is attached by %s", ErrConsoleBusy, what, lockHolder(lock))
		case !force:
			err = fmt.Errorf("%w: %s is attached by this process (ConsoleOptions.Force takes it over)", ErrConsoleBusy, what)
		default:
			holder.CloseWith(fmt.Errorf("%w: %s", ErrTakenOver, what))
			err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		}
	}
	if err != nil {
		lock.Close()
		if errors.Is(err, ErrConsoleBusy) {
			return nil, err
		}
		return nil, fmt.Errorf("launcher: lock %s: %w", what, err)
	}
	if err := lock.Truncate(0); err == nil {
		_, _ = lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	conn, err := dialConsole(ctx, socket)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("launcher: %s: %w", what, err)
	}
	var s *Conn
	s = New(conn, what, func() {
		consoles.mu.Lock()
		if consoles.held[socket] == s {
			delete(consoles.held, socket)
		}
		consoles.mu.Unlock()
		lock.Close() // releases the lock
	})
	consoles.mu.Lock()
	consoles.held[socket] = s
	consoles.mu.Unlock()
	s.Bind(ctx)
	return s, nil
}

// consoleDialRetry bounds how long dialConsole retries a socket whose
// queue is full, and how often.
const (
	consoleDialRetry  = 5 * time.Second
	consoleDialPeriod = 10 * time.Millisecond
)

// dialConsole connects to a serial socket. QEMU listens there with a
// queue of one and takes the next client only once it has seen the last
// one leave: right after a detach the queue may be full (EAGAIN), and
// dialConsole tries again, for a few seconds at most.
func dialConsole(ctx context.Context, socket string) (net.Conn, error) {
	var d net.Dialer
	deadline := time.Now().Add(consoleDialRetry)
	for {
		conn, err := d.DialContext(ctx, "unix", socket)
		if err == nil || !errors.Is(err, syscall.EAGAIN) || time.Now().After(deadline) {
			return conn, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(consoleDialPeriod):
		}
	}
}

// lockHolder names the process that holds a console's lock, from the ID
// it wrote into the lock file.
func lockHolder(lock *os.File) string {
	buf := make([]byte, 32)
	n, _ := lock.ReadAt(buf, 0)
	if pid, err := strconv.Atoi(strings.TrimSpace(string(buf[:n]))); err == nil && pid > 0 {
		return "process " + strconv.Itoa(pid)
	}
	return "another process"
}
