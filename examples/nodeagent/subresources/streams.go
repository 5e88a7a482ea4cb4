package subresources

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
	"github.com/vmi2libvirt/vmi2libvirt/stream"
)

// checkConsole allows the serial console of a running VMI that has one.
// Not running yet is 400, which virtctl console retries until its timeout.
func checkConsole(vmi *v1.VirtualMachineInstance) *apierrors.StatusError {
	switch {
	case isFalse(vmi.Spec.Domain.Devices.AutoattachSerialConsole):
		return apierrors.NewBadRequest("No serial consoles are present.")
	case vmi.Status.Phase == v1.Failed:
		return vmiConflict(vmi.Name, "VMI is in failed status")
	case !vmi.IsRunning():
		return apierrors.NewBadRequest(msgVMINotRunning)
	}
	return nil
}

// checkDisplay allows the VNC display of a running VMI that has one.
func checkDisplay(vmi *v1.VirtualMachineInstance) *apierrors.StatusError {
	switch {
	case isFalse(vmi.Spec.Domain.Devices.AutoattachGraphicsDevice):
		return apierrors.NewBadRequest("No graphics devices are present.")
	case !vmi.IsRunning():
		return apierrors.NewBadRequest(msgVMINotRunning)
	}
	return nil
}

// isFalse tells whether an optional switch is set to false (unset is on).
func isFalse(b *bool) bool { return b != nil && !*b }

// stream serves GET virtualmachineinstances/NAME/OP (console, vnc) as
// virt-api does: the VMI read and checked, its node agent's stream
// dialled, and only then the request upgraded to a WebSocket (subprotocol
// plain.kubevirt.io) whose binary messages carry the stream's bytes —
// raw serial bytes, or RFB. A refusal before the upgrade is a Status:
// the checks', 400 when the agent cannot be found, 500 when its stream
// cannot be opened.
func (s *Server) stream(op string, check vmiCheck) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, ns, name := r.Context(), r.PathValue("namespace"), r.PathValue("name")
		vmi, serr := s.fetchVMI(ctx, ns, name)
		if serr == nil {
			serr = check(vmi)
		}
		var addr string
		if serr == nil {
			addr, serr = s.agentOf(ctx, vmi)
		}
		if serr != nil {
			writeStatus(w, serr)
			return
		}
		query := url.Values{}
		if op == nodeapi.VNC {
			// Default false: the VMI's earlier VNC session is dropped.
			preserve, _ := strconv.ParseBool(r.URL.Query().Get(nodeapi.PreserveSessionParam))
			query.Set(nodeapi.PreserveSessionParam, strconv.FormatBool(preserve))
		}
		conn, err := s.agents.Dial(ctx, addr, ns, name, op, query)
		if err != nil {
			writeStatus(w, apierrors.NewInternalError(fmt.Errorf("%s: %w", msgNoWebsocket, err)))
			return
		}
		defer conn.Close()
		log := s.log.With("vmi", ns+"/"+name, "stream", op, "node", vmi.Status.NodeName)
		srv := &stream.Server{
			Open: func(context.Context) (io.ReadWriteCloser, error) { return conn, nil },
			// Any origin, as virt-api's upgrader allows: the API server
			// authenticated the request.
			OriginPatterns: []string{"*"},
			Logger:         log,
		}
		srv.ServeHTTP(w, r)
	}
}
