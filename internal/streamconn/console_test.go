package streamconn

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestDialConsoleFullQueue: a unix socket whose listen queue is full
// refuses connections with EAGAIN (as QEMU's serial socket, queue of one,
// does right after a detach); dialConsole waits until a place frees, and
// gives up when its context ends.
func TestDialConsoleFullQueue(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serial0.sock")
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil { // room for one waiting client
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), path)
	ln, err := net.FileListener(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	waiting, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("first client: %v", err)
	}
	defer waiting.Close()
	if c, err := net.Dial("unix", path); !errors.Is(err, syscall.EAGAIN) {
		if c != nil {
			c.Close()
		}
		t.Fatalf("second client on a full queue: %v, want EAGAIN (the case dialConsole handles)", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	_, err = dialConsole(ctx, path)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("dialConsole on a queue that stays full: %v, want its context's error", err)
	}

	accepted := make(chan struct{})
	go func() {
		time.Sleep(50 * time.Millisecond)
		if c, err := ln.Accept(); err == nil {
			defer c.Close()
		}
		close(accepted)
		time.Sleep(time.Second)
	}()
	c, err := dialConsole(context.Background(), path)
	if err != nil {
		t.Fatalf("dialConsole once the queue has room: %v", err)
	}
	c.Close()
	<-accepted
}
