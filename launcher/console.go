package launcher

import (
	"context"
	"errors"
	"io"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
	"github.com/vmi2libvirt/vmi2libvirt/internal/streamconn"
)

var (
	// ErrConsoleBusy is returned by Console when the VMI's serial console
	// is attached already, by this process (ConsoleOptions.Force takes it
	// over) or by another one (it cannot be taken from there). Retrying
	// succeeds once the other attachment is closed.
	ErrConsoleBusy = streamconn.ErrConsoleBusy

	// ErrTakenOver is what the Read and Write of a console stream return
	// once a Console call with ConsoleOptions.Force took the console over.
	ErrTakenOver = streamconn.ErrTakenOver
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
	return l.openStream(ctx, func(ctx context.Context) (*streamconn.Conn, error) {
		var socket string
		err := l.runningDomain(ctx, vmi, func(_ *libvirt.Domain, cur currentDomain) error {
			var err error
			socket, err = hostplan.SerialSocket(cur.xml)
			return err
		})
		if err != nil {
			return nil, err
		}
		return streamconn.AttachConsole(ctx, socket, "console of "+key, opts.Force)
	})
}
