package stream_test

// Server with in-memory streams, beside TestE2EVNC (which serves a
// real guest's VNC display): what each client gets, refusals, and the end
// of serving.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/vmi2libvirt/vmi2libvirt/stream"
)

// errNotRunning stands for the error of a stream that cannot be opened.
var errNotRunning = errors.New("launcher: the VMI is not running")

// upperStreams opens streams that answer each line with the line in upper
// case, prefixed with the stream's number, and records when each closes.
type upperStreams struct {
	opened atomic.Int32
	mu     sync.Mutex
	closed map[int32]bool
}

func (u *upperStreams) open(ctx context.Context) (io.ReadWriteCloser, error) {
	n := u.opened.Add(1)
	ours, theirs := net.Pipe()
	s := &recordedStream{Conn: ours, close: func() {
		u.mu.Lock()
		u.closed[n] = true
		u.mu.Unlock()
	}}
	context.AfterFunc(ctx, func() { _ = s.Close() })
	go func() {
		defer theirs.Close()
		sc := bufio.NewScanner(theirs)
		for sc.Scan() {
			if _, err := fmt.Fprintf(theirs, "%d:%s\n", n, strings.ToUpper(sc.Text())); err != nil {
				return
			}
		}
	}()
	return s, nil
}

// recordedStream is a net.Conn whose Close is recorded.
type recordedStream struct {
	net.Conn
	once  sync.Once
	close func()
}

func (s *recordedStream) Close() error {
	s.once.Do(s.close)
	return s.Conn.Close()
}

func (u *upperStreams) isClosed(n int32) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.closed[n]
}

// ask writes line and reads the answer.
func ask(t *testing.T, rw io.ReadWriter, r *bufio.Reader, line string) string {
	t.Helper()
	if _, err := io.WriteString(rw, line+"\n"); err != nil {
		t.Fatalf("write: %v", err)
	}
	s, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	return strings.TrimSuffix(s, "\n")
}

// eventually polls cond for up to ten seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("not so after 10s: %s", what)
		}
	}
}

// TestServe: each TCP client gets a stream of its own; a
// client leaving closes its stream; a client whose stream cannot be
// opened is disconnected; when the context ends Serve closes the
// listener and the clients and returns nil.
func TestServe(t *testing.T) {
	u := &upperStreams{closed: map[int32]bool{}}
	refuse := atomic.Bool{}
	srv := &stream.Server{Open: func(ctx context.Context) (io.ReadWriteCloser, error) {
		if refuse.Load() {
			return nil, errNotRunning
		}
		return u.open(ctx)
	}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()

	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		return c, bufio.NewReader(c)
	}
	a, ar := dial()
	if got := ask(t, a, ar, "hello"); got != "1:HELLO" {
		t.Errorf("first client: %q, want 1:HELLO", got)
	}
	b, br := dial()
	if got := ask(t, b, br, "other"); got != "2:OTHER" {
		t.Errorf("second client: %q, want 2:OTHER", got)
	}
	if got := ask(t, a, ar, "again"); got != "1:AGAIN" {
		t.Errorf("first client again: %q, want 1:AGAIN", got)
	}
	b.Close()
	eventually(t, "the second client's stream is closed", func() bool { return u.isClosed(2) })
	if u.isClosed(1) {
		t.Error("the first client's stream closed when the second client left")
	}

	refuse.Store(true)
	c, _ := dial()
	if n, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("client whose stream is refused: read %d bytes, %v; want EOF", n, err)
	}
	c.Close()

	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve: %v, want nil once its context ended", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if _, err := ar.ReadString('\n'); err != io.EOF {
		t.Errorf("client after Serve returned: %v, want EOF", err)
	}
	if !u.isClosed(1) {
		t.Error("a stream was left open after Serve returned")
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the listener still accepts after Serve returned")
	}
}

// TestServeWebSocket: a WebSocket gets a stream in binary messages,
// with the subprotocol it asks for (binary or KubeVirt's); a stream
// that cannot be opened closes the WebSocket with status 1013 and the
// reason; an origin in OriginPatterns is let in, another refused.
func TestServeWebSocket(t *testing.T) {
	u := &upperStreams{closed: map[int32]bool{}}
	refuse := atomic.Bool{}
	srv := &stream.Server{
		Open: func(ctx context.Context) (io.ReadWriteCloser, error) {
			if refuse.Load() {
				return nil, fmt.Errorf("no stream: %w", errNotRunning)
			}
			return u.open(ctx)
		},
		OriginPatterns: []string{"localhost:6080"},
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 1)
	go func() { served <- srv.ServeWebSocket(ctx, ln) }()
	url := "ws://" + ln.Addr().String() + "/websockify"

	for i, sub := range []string{"", "binary", stream.KubeVirtSubprotocol} {
		opts := &websocket.DialOptions{}
		if sub != "" {
			opts.Subprotocols = []string{sub}
		}
		if i == 1 {
			opts.HTTPHeader = map[string][]string{"Origin": {"http://localhost:6080"}}
		}
		c, _, err := websocket.Dial(ctx, url, opts)
		if err != nil {
			t.Fatalf("dial with subprotocol %q: %v", sub, err)
		}
		if c.Subprotocol() != sub {
			t.Errorf("subprotocol %q, want %q", c.Subprotocol(), sub)
		}
		conn := websocket.NetConn(ctx, c, websocket.MessageBinary)
		want := fmt.Sprintf("%d:WS", i+1)
		if got := ask(t, conn, bufio.NewReader(conn), "ws"); got != want {
			t.Errorf("answer %q, want %q", got, want)
		}
		conn.Close()
	}

	_, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: map[string][]string{"Origin": {"http://elsewhere.example"}}})
	if err == nil || resp == nil || resp.StatusCode != 403 {
		t.Errorf("foreign origin: %v, response %+v; want refused with 403", err, resp)
	}

	refuse.Store(true)
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	_, _, err = c.Read(ctx)
	if code := websocket.CloseStatus(err); code != websocket.StatusTryAgainLater {
		t.Errorf("refused stream: close status %d (%v), want %d", code, err, websocket.StatusTryAgainLater)
	}
	var ce websocket.CloseError
	if !errors.As(err, &ce) || !strings.Contains(ce.Reason, "no stream: launcher: the VMI is not running") {
		t.Errorf("refused stream: close reason %q, want Open's error", ce.Reason)
	}

	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("ServeWebSocket: %v, want nil once its context ended", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeWebSocket did not return after its context ended")
	}
}
