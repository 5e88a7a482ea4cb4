package main

import (
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// soakLink is a node's network path to the API server: the node's agent
// reaches the API server through a TCP proxy of the link's own on
// loopback, which a partition cuts. While cut, no byte passes either way
// and new connections wait, until it heals; nothing is closed, as in a
// real partition, where TCP connections only fall silent (client-go's
// HTTP/2 health check gives one up after 30 s of silence and a 15 s ping).
type soakLink struct {
	ln     net.Listener
	target string // the API server's host:port
	// kubeconfig is the cluster's kubeconfig with the link's address as
	// the server's.
	kubeconfig string

	mu    sync.Mutex
	up    chan struct{} // closed while the link is up
	conns map[net.Conn]bool
	// held counts what partitions held up: new connections, and reads
	// waiting to pass on.
	held atomic.Int64
}

// newSoakLink starts the link to the API server that the kubeconfig file
// names, closed when the test ends.
func newSoakLink(t *testing.T, kubeconfig string) *soakLink {
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &soakLink{ln: ln, up: make(chan struct{}), conns: map[net.Conn]bool{}}
	close(l.up)
	for _, c := range cfg.Clusters {
		u, err := url.Parse(c.Server)
		if err != nil {
			t.Fatal(err)
		}
		l.target, u.Host = u.Host, ln.Addr().String()
		c.Server = u.String()
	}
	l.kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, l.kubeconfig); err != nil {
		t.Fatal(err)
	}
	go l.serve()
	t.Cleanup(l.close)
	return l
}

// cut partitions the link (true) or heals it (false).
func (l *soakLink) cut(partitioned bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.up:
		if partitioned {
			l.up = make(chan struct{})
		}
	default:
		if !partitioned {
			close(l.up)
		}
	}
}

// pass returns once the link is up.
func (l *soakLink) pass() {
	l.mu.Lock()
	up := l.up
	l.mu.Unlock()
	select {
	case <-up:
	default:
		l.held.Add(1)
		<-up
	}
}

func (l *soakLink) serve() {
	for {
		c, err := l.ln.Accept()
		if err != nil {
			return
		}
		go l.forward(c)
	}
}

// forward joins the client connection c to the API server, both ways,
// each chunk waiting for the link to be up.
func (l *soakLink) forward(c net.Conn) {
	l.pass()
	s, err := net.Dial("tcp", l.target)
	if err != nil {
		c.Close()
		return
	}
	if !l.track(c, s) {
		return
	}
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				l.pass()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					err = werr
				}
			}
			if err != nil {
				break
			}
		}
		done <- struct{}{}
	}
	go pipe(s, c)
	go pipe(c, s)
	<-done // one way ended (EOF or error): end both
	l.untrack(c, s)
	<-done
}

// track records the connections to close when the link closes; false
// (and both closed) when it already has.
func (l *soakLink) track(cs ...net.Conn) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conns == nil {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		l.conns[c] = true
	}
	return true
}

func (l *soakLink) untrack(cs ...net.Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range cs {
		c.Close()
		delete(l.conns, c)
	}
}

// close heals the link, stops it listening and closes its connections.
func (l *soakLink) close() {
	l.cut(false)
	_ = l.ln.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	for c := range l.conns {
		c.Close()
	}
	l.conns = nil
}

// TestSoakLink: bytes pass through a link, a partition holds them (and a
// new connection) without closing anything, and they pass once it heals.
func TestSoakLink(t *testing.T) {
	server, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	go func() {
		for {
			c, err := server.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["echo"] = &clientcmdapi.Cluster{Server: "https://" + server.Addr().String()}
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	l := newSoakLink(t, kubeconfig)
	if l.target != server.Addr().String() {
		t.Fatalf("the link goes to %s, want %s", l.target, server.Addr())
	}
	addr := l.ln.Addr().String()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// echo writes what (unless "") and reads want back within wait; the
	// read's error.
	echo := func(c net.Conn, what, want string, wait time.Duration) error {
		if what != "" {
			if _, err := c.Write([]byte(what)); err != nil {
				t.Fatal(err)
			}
		}
		_ = c.SetReadDeadline(time.Now().Add(wait))
		buf := make([]byte, len(want))
		if _, err := io.ReadFull(c, buf); err != nil {
			return err
		}
		if string(buf) != want {
			t.Fatalf("read %q, want %q", buf, want)
		}
		return nil
	}
	if err := echo(c, "a", "a", 5*time.Second); err != nil {
		t.Fatalf("through the link: %v", err)
	}
	l.cut(true)
	if err := echo(c, "b", "b", 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("partitioned, the echo came back (%v)", err)
	}
	c2, err := net.Dial("tcp", addr) // accepted by the kernel, held by the link
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := echo(c2, "c", "c", 300*time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("partitioned, a new connection's echo came back (%v)", err)
	}
	l.cut(false)
	for conn, want := range map[net.Conn]string{c: "b", c2: "c"} {
		if err := echo(conn, "", want, 5*time.Second); err != nil {
			t.Fatalf("healed, the held bytes did not pass: %v", err)
		}
	}
	if l.held.Load() < 2 {
		t.Errorf("held %d, want at least 2 (a read, a connection)", l.held.Load())
	}
}
