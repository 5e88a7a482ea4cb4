//go:build cgo

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/spf13/cobra"

	"github.com/vmi2libvirt/vmi2libvirt/internal/cmdutil"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/stream"
)

func newVNCCommand() *cobra.Command {
	var (
		lf            launcherFlags
		vf            vmiFlags
		listen, ws    string
		originPattern []string
	)
	cmd := &cobra.Command{
		Use:   "vnc NAME [-n NAMESPACE] [--listen 127.0.0.1:PORT] [--ws 127.0.0.1:PORT]",
		Short: "Serve a running VMI's VNC display on a loopback port, for any VNC viewer or noVNC",
		Long: `Serve the display of the VMI called NAME until interrupted (Ctrl-C), as virtctl vnc
--proxy-only does: on a loopback TCP port for VNC viewers (--listen, the default),
and as a WebSocket for noVNC (--ws). Each client gets a connection of its own to
QEMU's VNC server. The display has no password, so it is served on loopback only;
reach it from elsewhere through ssh -L. Port 0 picks a free port; the address is
printed.`,
		Example: `  vmi2libvirt vnc tiny --listen 127.0.0.1:5900 &
  vncviewer 127.0.0.1:5900

  # noVNC in a browser
  vmi2libvirt vnc tiny --ws 127.0.0.1:6080`,
		Args:              exactArgs(1, "NAME"),
		ValidArgsFunction: completeNames(&lf, &vf),
		RunE: func(cmd *cobra.Command, args []string) error {
			if ws == "" && !cmd.Flags().Changed("listen") {
				listen = "127.0.0.1:5900"
			}
			var lns []struct {
				what string
				ln   net.Listener
			}
			defer func() {
				for _, l := range lns {
					l.ln.Close()
				}
			}()
			for flag, addr := range map[string]string{"--listen": listen, "--ws": ws} {
				if addr == "" {
					continue
				}
				ln, err := cmdutil.ListenLoopback(flag, addr)
				if err != nil {
					return usageErrorf("%v", err)
				}
				lns = append(lns, struct {
					what string
					ln   net.Listener
				}{flag, ln})
			}
			return lf.run(cmd, false, func(ctx context.Context, l *launcher.Launcher) error {
				vmi := vf.vmi(args[0])
				// Open the display once now, so that a VMI that is not there
				// or not running is said at once.
				first, err := l.VNC(ctx, vmi)
				if err != nil {
					if errors.Is(err, launcher.ErrNoDomain) {
						return notFound(l, vmi)
					}
					return launcherError(err)
				}
				first.Close()
				srv := &stream.Server{
					Open:           func(ctx context.Context) (io.ReadWriteCloser, error) { return l.VNC(ctx, vmi) },
					OriginPatterns: originPattern,
					Logger:         cmdutil.Logger(cmd.ErrOrStderr(), lf.verbose),
				}
				errs := make(chan error, len(lns))
				for _, s := range lns {
					serve, url := srv.Serve, s.ln.Addr().String()
					if s.what == "--ws" {
						serve, url = srv.ServeWebSocket, "ws://"+url+"/"
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "VNC of %s/%s on %s\n", vmi.Namespace, vmi.Name, url)
					go func() { errs <- serve(ctx, s.ln) }()
				}
				for range lns {
					if err := <-errs; err != nil && ctx.Err() == nil {
						return launcherError(err)
					}
				}
				return nil
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&listen, "listen", "", "loopback address of the TCP port for VNC viewers (default 127.0.0.1:5900 when --ws is not given)")
	fs.StringVar(&ws, "ws", "", "loopback address of the WebSocket for noVNC")
	fs.StringSliceVar(&originPattern, "origin", nil, "web origins (host patterns) whose pages may open the WebSocket, besides its own")
	vf.register(cmd)
	lf.register(cmd)
	return cmd
}
