// Package stream serves a byte stream — a VMI's VNC display or its serial
// console, as the launcher opens them (launcher.Launcher.VNC, Console) — to
// network clients, each with a stream of its own: on a TCP listener, for
// any VNC viewer, or as WebSocket connections of binary messages, what
// noVNC and KubeVirt's virtctl speak. It needs no libvirt and no cgo: a
// program that relays streams it got from elsewhere serves them too.
package stream

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// Server serves a stream — a VMI's VNC display, or its serial
// console — to network clients, each with a stream of its own: on a
// listener, so that any VNC viewer can connect to a TCP port (Serve), or
// as WebSocket connections of binary messages, what noVNC speaks
// (ServeHTTP, ServeWebSocket). Bytes are copied both ways until either
// side closes; then both are closed.
//
// The clients are not authenticated: whoever reaches the port reaches the
// VMI. Serve on loopback (127.0.0.1), and let people in through ssh -L or
// an authenticating proxy.
//
//	srv := &stream.Server{Open: func(ctx context.Context) (io.ReadWriteCloser, error) {
//		return l.VNC(ctx, vmi) // l is a *launcher.Launcher
//	}}
//	ln, err := net.Listen("tcp", "127.0.0.1:5900")
//	...
//	err = srv.Serve(ctx, ln) // until ctx ends
type Server struct {
	// Open opens the stream of one client, for example l.VNC(ctx, vmi).
	// Its ctx ends when the client is gone or the server stops; the stream
	// must close then. A client whose stream cannot be opened is
	// disconnected (a WebSocket with close status 1013, try again later,
	// and Open's error as the reason).
	Open func(ctx context.Context) (io.ReadWriteCloser, error)

	// OriginPatterns are the web origins, besides the server's own host,
	// whose pages may open a WebSocket: host patterns of path.Match, such
	// as "localhost:6080" for noVNC served there. Empty: only pages of the
	// server's own host — a page of any other site the user visits cannot
	// reach the VMI.
	OriginPatterns []string

	// Logger receives a line for each client that connects or leaves
	// (Info) and each one refused (Warn: its stream could not be opened,
	// or a WebSocket's handshake or origin was refused); nil is silent.
	Logger *slog.Logger
}

// KubeVirtSubprotocol is the WebSocket subprotocol of KubeVirt's console and
// VNC subresources: the stream's bytes as binary messages.
const KubeVirtSubprotocol = "plain.kubevirt.io"

// subprotocols are the WebSocket subprotocols ServeHTTP accepts: "binary"
// (websockify's, which noVNC may ask for) and KubeVirtSubprotocol. Both
// carry the stream's bytes as binary messages; so does a connection that
// asks for none.
var subprotocols = []string{"binary", KubeVirtSubprotocol}

func (s *Server) log() *slog.Logger {
	if s.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return s.Logger
}

// Serve accepts connections on ln and joins each to a stream of its own
// until ctx ends; it then closes ln, waits until every client is
// disconnected, and returns nil. It returns an Accept error of ln (after
// closing it and disconnecting the clients).
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stop()
	var clients sync.WaitGroup
	defer clients.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			_ = ln.Close()
			return err
		}
		clients.Add(1)
		go func() {
			defer clients.Done()
			s.join(ctx, conn, conn.RemoteAddr().String())
		}()
	}
}

// ServeHTTP upgrades the request to a WebSocket (subprotocol "binary" or
// KubeVirtSubprotocol, origins checked against OriginPatterns) and joins it
// to a stream of its own: binary messages carry the stream's bytes. The
// stream's context is the request's.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols:   subprotocols,
		OriginPatterns: s.OriginPatterns,
	})
	if err != nil {
		s.log().Warn("WebSocket refused", "client", r.RemoteAddr, "err", err)
		return // Accept answered the request
	}
	ctx := r.Context()
	stream, err := s.Open(ctx)
	if err != nil {
		s.log().Warn("client refused: stream not opened", "client", r.RemoteAddr, "err", err)
		reason := err.Error()
		if len(reason) > 120 { // a close frame's reason is at most 123 bytes
			reason = reason[:120]
		}
		_ = c.Close(websocket.StatusTryAgainLater, reason)
		return
	}
	s.copy(ctx, websocket.NetConn(ctx, c, websocket.MessageBinary), stream, r.RemoteAddr)
}

// ServeWebSocket serves ServeHTTP on ln, at every path, until ctx ends;
// it then closes ln and the clients' connections and returns nil. Other
// errors are http.Server.Serve's.
func (s *Server) ServeWebSocket(ctx context.Context, ln net.Listener) error {
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	stop := context.AfterFunc(ctx, func() { _ = hs.Close() })
	defer stop()
	err := hs.Serve(ln)
	if errors.Is(err, http.ErrServerClosed) && ctx.Err() != nil {
		return nil
	}
	return err
}

// join opens a stream for the client and copies between them.
func (s *Server) join(ctx context.Context, client io.ReadWriteCloser, who string) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := s.Open(ctx)
	if err != nil {
		s.log().Warn("client refused: stream not opened", "client", who, "err", err)
		_ = client.Close()
		return
	}
	s.copy(ctx, client, stream, who)
}

// copy copies between client and stream until either side closes, or ctx
// ends; then it closes both.
func (s *Server) copy(ctx context.Context, client, stream io.ReadWriteCloser, who string) {
	s.log().Info("client connected", "client", who)
	closeBoth := func() {
		_ = client.Close()
		_ = stream.Close()
	}
	stop := context.AfterFunc(ctx, closeBoth)
	defer stop()
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(stream, client)
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(client, stream)
		done <- struct{}{}
	}()
	<-done
	closeBoth()
	<-done
	s.log().Info("client left", "client", who)
}
