package launcher

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
	"github.com/vmi2libvirt/vmi2libvirt/internal/streamconn"
)

// VNC opens a connection to the VMI's VNC display and returns it as a
// stream that speaks RFB (the VNC protocol) from the server's first
// message on: QEMU's version "RFB 003.008", then security type None (the
// launcher is the party libvirt authenticated, so QEMU skips its own
// authentication). A VNC client, or a proxy such as stream.Server, talks
// to it as to a VNC server's TCP port. It closes when ctx ends (Read and
// Write then return an error wrapping ctx's), when Close is called, or
// when the guest's QEMU exits (Read returns io.EOF). Only the VMI's
// namespace and name are used.
//
// Any number of VNC streams may be open at once: QEMU's VNC server shows
// each client the same display and takes input from all. As its default
// share policy (allow-exclusive) says, a client that asks for exclusive
// access in its ClientInit (shared-flag 0, what most viewers send unless
// told to share) disconnects the others; clients that all ask to share
// stay together.
//
// The connection is one end of a socket pair whose other end libvirt hands
// to QEMU (virDomainOpenGraphicsFD), so the libvirt connection must be
// local (a unix socket: qemu:///system). The stream does not depend on the
// launcher's connection afterwards: it stays open across reconnections and
// Close.
//
// Errors: ErrNoDomain, a *ConflictError (ErrConflict) for a domain this
// launcher does not own, ErrNotRunning, an *InvalidError (ErrInvalid)
// naming spec.domain.devices.autoattachGraphicsDevice for a VMI without
// graphics, ErrUnavailable while libvirt cannot be reached, a
// *LibvirtError when libvirt or QEMU refuses.
func (l *Launcher) VNC(ctx context.Context, vmi *v1.VirtualMachineInstance) (io.ReadWriteCloser, error) {
	if vmi == nil {
		return nil, errors.New("launcher: VNC of a nil VMI")
	}
	what := "VNC of " + vmiKey(vmi)
	return l.openStream(ctx, func(ctx context.Context) (*streamconn.Conn, error) {
		var conn net.Conn
		err := l.runningDomain(ctx, vmi, func(dom *libvirt.Domain, cur currentDomain) error {
			idx, err := hostplan.VNCIndex(cur.xml)
			if err != nil {
				return err
			}
			f, err := dom.OpenGraphicsFD(idx, libvirt.DOMAIN_OPEN_GRAPHICS_SKIPAUTH)
			if err != nil {
				return wrapErr(err, "open the VNC display of domain %s", cur.xml.Name)
			}
			defer f.Close()
			conn, err = net.FileConn(f)
			if err != nil {
				return fmt.Errorf("launcher: %s: %w", what, err)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		s := streamconn.New(conn, what, nil)
		s.Bind(ctx)
		return s, nil
	})
}
