package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/internal/cmdutil"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/stream"
)

// vncFlags say where the VMI's VNC display is served.
type vncFlags struct {
	tcp, ws string   // loopback host:port, or empty
	origins []string // web origins allowed to open the WebSocket
}

// serveVNC serves the VMI's VNC display as the flags say, until ctx ends:
// every client gets a connection of its own to QEMU's VNC server (see
// launcher.VNC); refused clients are logged to log. It returns once the
// listeners are open; done is closed when serving has ended.
func serveVNC(ctx context.Context, l *launcher.Launcher, vmi *v1.VirtualMachineInstance, f vncFlags, log *slog.Logger) (done <-chan struct{}, err error) {
	finished := make(chan struct{})
	if f.tcp == "" && f.ws == "" {
		close(finished)
		return finished, nil
	}
	var tcp, ws net.Listener
	if f.tcp != "" {
		if tcp, err = cmdutil.ListenLoopback("-vnc", f.tcp); err != nil {
			return nil, err
		}
	}
	if f.ws != "" {
		if ws, err = cmdutil.ListenLoopback("-vnc-ws", f.ws); err != nil {
			if tcp != nil {
				tcp.Close()
			}
			return nil, err
		}
	}
	srv := &stream.Server{
		Open:           func(ctx context.Context) (io.ReadWriteCloser, error) { return l.VNC(ctx, vmi) },
		OriginPatterns: f.origins,
		Logger:         log, // a refused client is a warning
	}
	key := vmi.Namespace + "/" + vmi.Name
	waiting := 0
	ended := make(chan struct{}, 2)
	serve := func(what string, fn func(context.Context, net.Listener) error, ln net.Listener) {
		waiting++
		go func() {
			if err := fn(ctx, ln); err != nil {
				fmt.Fprintf(os.Stderr, "launch: serving the VNC %s: %v\n", what, err)
			}
			ended <- struct{}{}
		}()
	}
	if tcp != nil {
		fmt.Fprintf(os.Stderr, "launch: VNC of %s on %s (any VNC viewer)\n", key, tcp.Addr())
		serve("port", srv.Serve, tcp)
	}
	if ws != nil {
		fmt.Fprintf(os.Stderr, "launch: VNC of %s as a WebSocket on ws://%s/ (noVNC)\n", key, ws.Addr())
		serve("WebSocket", srv.ServeWebSocket, ws)
	}
	go func() {
		for range waiting {
			<-ended
		}
		close(finished)
	}()
	return finished, nil
}
