package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/internal/streamconn"
)

// ErrNotRunning is returned by Console and VNC for a VMI whose domain is
// defined but not running (not started yet, or ended). Retrying can
// succeed once it runs.
var ErrNotRunning = errors.New("launcher: the VMI is not running")

// openStream runs open in a goroutine of its own and returns its stream,
// or ctx's error as soon as ctx ends: a libvirt call cannot be interrupted.
// A stream that open returns after that is closed.
func (l *Launcher) openStream(ctx context.Context, open func(ctx context.Context) (*streamconn.Conn, error)) (io.ReadWriteCloser, error) {
	if err := l.addWork(); err != nil {
		return nil, err
	}
	type result struct {
		s   *streamconn.Conn
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
