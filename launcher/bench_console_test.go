package launcher_test

import (
	"context"
	"io"
	"net"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/stream"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/rfb"
)

// BenchmarkConsoleAttach measures attaching to a VMI's serial console and
// detaching (Console, then Close): the domain read and ownership check,
// the lock, the socket. The guest stays paused, so the machine's cores
// are free.
//
//	go test ./launcher -run '^$' -bench ConsoleAttach -benchmem
func BenchmarkConsoleAttach(b *testing.B) {
	e := newConsoleEnv(b)
	ctx := context.Background()
	vmi := consoleVMI(b, "bench-console", "")
	e.sync(b, vmi)
	b.ReportAllocs()
	for b.Loop() {
		c, err := e.l.Console(ctx, vmi, launcher.ConsoleOptions{})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVNCOpen measures opening a VMI's VNC display (VNC, through
// virDomainOpenGraphicsFD), reading QEMU's RFB version and closing it. The
// guest stays paused.
//
//	go test ./launcher -run '^$' -bench VNCOpen -benchmem
func BenchmarkVNCOpen(b *testing.B) {
	e := newConsoleEnv(b)
	ctx := context.Background()
	vmi := consoleVMI(b, "bench-vnc", "")
	e.sync(b, vmi)
	ver := make([]byte, len(rfb.Version))
	b.ReportAllocs()
	for b.Loop() {
		s, err := e.l.VNC(ctx, vmi)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(s, ver); err != nil || string(ver) != rfb.Version {
			b.Fatalf("RFB version %q, %v", ver, err)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamServerCopy measures the bytes a stream.Server carries from a
// TCP client to its stream (here a loopback TCP connection to a reader
// that discards them), 64 KiB per operation.
//
//	go test ./launcher -run '^$' -bench StreamServerCopy -benchmem
func BenchmarkStreamServerCopy(b *testing.B) {
	sink, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer sink.Close()
	go func() {
		for {
			c, err := sink.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	srv := &stream.Server{Open: func(ctx context.Context) (io.ReadWriteCloser, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", sink.Addr().String())
	}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	defer func() { cancel(); <-served }()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	chunk := make([]byte, 64<<10)
	b.SetBytes(int64(len(chunk)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := client.Write(chunk); err != nil {
			b.Fatal(err)
		}
	}
}
