package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/api"
)

var (
	// ErrConsoleBusy is returned by Console when the VMI's serial console
	// is attached already, by this process (ConsoleOptions.Force takes it
	// over) or by another one (it cannot be taken from there). Retrying
	// succeeds once the other attachment is closed.
	ErrConsoleBusy = errors.New("launcher: the console is attached elsewhere")

	// ErrTakenOver is what the Read and Write of a console stream return
	// once a Console call with ConsoleOptions.Force took the console over.
	ErrTakenOver = errors.New("launcher: another attachment took the console over")
)

// ConsoleOptions say how Console attaches.
type ConsoleOptions struct {
	// Force takes the console over from an attachment that this process
	// holds (made by any Launcher in it), as virsh console --force does:
	// that stream is closed, its Read and Write return ErrTakenOver. An
	// attachment of another process cannot be taken over.
	Force bool
}

// Console attaches to the serial console of the VMI — serial port 0, the
// one KubeVirt's virtctl console reaches — and returns it as a stream:
// what the guest writes is read from it, what is written to it is typed
// on the console. It closes when ctx ends (Read and Write then return an
// error wrapping ctx's), when Close is called, or when the guest's QEMU
// exits (Read returns io.EOF). The VMI keeps running when it closes. Only
// the VMI's namespace and name are used. The stream does not depend on the
// launcher's libvirt connection: it stays open across reconnections and
// Close.
//
// The console has one attachment at a time, host-wide: a second Console
// call, from this process or another, gets ErrConsoleBusy; within one
// process, ConsoleOptions.Force takes the console over instead. Bytes are
// never split between attachments. What the guest wrote while nobody was
// attached is not replayed, but it is in the serial console log
// (convert.Paths.SerialLog, when serial console logging is on), which
// QEMU keeps writing while a console is attached.
//
// The stream connects to the unix socket of the domain's serial port (the
// path its live definition names; convert.Paths.SerialSocket). libvirt
// 9.0's virDomainOpenConsole cannot serve it: for QEMU it opens only pty
// consoles. QEMU accepts one client on that socket; the launcher holds a
// lock file beside it (SOCKET.lock, with the holder's process ID) while
// attached, so that a second attachment fails at once rather than waits
// unseen in the socket's queue. A program that connects to the socket
// without the lock does wait there. So Console, like Sync, needs the
// launcher's process on the VMI's host, with access to its state folder.
//
// Errors: ErrNoDomain, a *ConflictError (ErrConflict) for a domain this
// launcher does not own, ErrNotRunning, ErrConsoleBusy, an *InvalidError
// (ErrInvalid) naming spec.domain.devices.autoattachSerialConsole for a
// VMI without a serial console, ErrUnavailable while libvirt cannot be
// reached.
func (l *Launcher) Console(ctx context.Context, vmi *v1.VirtualMachineInstance, opts ConsoleOptions) (io.ReadWriteCloser, error) {
	if vmi == nil {
		return nil, errors.New("launcher: Console of a nil VMI")
	}
	key := vmiKey(vmi)
	return l.openStream(ctx, func(ctx context.Context) (*stream, error) {
		var socket string
		err := l.runningDomain(ctx, vmi, func(_ *libvirt.Domain, cur currentDomain) error {
			var err error
			socket, err = serialSocket(cur.xml)
			return err
		})
		if err != nil {
			return nil, err
		}
		return attachConsole(ctx, socket, "console of "+key, opts.Force)
	})
}

// autoattachSerialConsole is the field that leaves a VMI without a serial
// console.
var autoattachSerialConsole = field.NewPath("spec", "domain", "devices", "autoattachSerialConsole")

// serialSocket returns the unix socket of a domain's serial port 0. A
// domain without one is the VMI's choice: an *InvalidError naming
// autoattachSerialConsole.
func serialSocket(d *libvirtxml.Domain) (string, error) {
	if d.Devices != nil {
		for _, s := range d.Devices.Serials {
			if s.Target != nil && s.Target.Port != nil && *s.Target.Port != 0 {
				continue
			}
			if s.Source == nil || s.Source.UNIX == nil || s.Source.UNIX.Path == "" {
				return "", fmt.Errorf("launcher: the serial console of domain %s is not a unix socket", d.Name)
			}
			return s.Source.UNIX.Path, nil
		}
	}
	return "", &InvalidError{Kind: api.KindVMI, Stage: "console", Errors: field.ErrorList{
		field.Invalid(autoattachSerialConsole, false, "the VMI has no serial console"),
	}}
}

// consoles are this process's console attachments, by serial socket.
// attach is held while an attachment is made, so that a forced one and the
// one it takes over do not interleave; mu guards held.
var consoles = struct {
	attach sync.Mutex
	mu     sync.Mutex
	held   map[string]*stream
}{held: map[string]*stream{}}

// attachConsole connects to the serial socket, holding its lock file for
// as long as the stream is open. force takes the console over from an
// attachment of this process.
func attachConsole(ctx context.Context, socket, what string, force bool) (*stream, error) {
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
			holder.closeWith(fmt.Errorf("%w: %s", ErrTakenOver, what))
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
	var s *stream
	s = newStream(conn, what, func() {
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
	s.bind(ctx)
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
