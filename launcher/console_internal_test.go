package launcher

// Unit tests of how Console and VNC find their device in a domain, beside
// the end-to-end tests on domains the converter made.

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"libvirt.org/go/libvirtxml"
)

func TestSerialSocket(t *testing.T) {
	port := func(n uint) *libvirtxml.DomainSerialTarget { return &libvirtxml.DomainSerialTarget{Port: &n} }
	unix := func(p string) *libvirtxml.DomainChardevSource {
		return &libvirtxml.DomainChardevSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{Mode: "bind", Path: p}}
	}
	for _, c := range []struct {
		name    string
		serials []libvirtxml.DomainSerial
		want    string // socket, or "" for an error
		invalid bool   // the error is an *InvalidError at autoattachSerialConsole
	}{
		{name: "none", invalid: true},
		{name: "port 0", serials: []libvirtxml.DomainSerial{{Target: port(0), Source: unix("/s/serial0.sock")}}, want: "/s/serial0.sock"},
		{name: "no target: port 0", serials: []libvirtxml.DomainSerial{{Source: unix("/s/a.sock")}}, want: "/s/a.sock"},
		{name: "port 0 after port 1", serials: []libvirtxml.DomainSerial{
			{Target: port(1), Source: unix("/s/serial1.sock")}, {Target: port(0), Source: unix("/s/serial0.sock")}}, want: "/s/serial0.sock"},
		{name: "only port 1", serials: []libvirtxml.DomainSerial{{Target: port(1), Source: unix("/s/serial1.sock")}}, invalid: true},
		{name: "a pty", serials: []libvirtxml.DomainSerial{{Target: port(0), Source: &libvirtxml.DomainChardevSource{Pty: &libvirtxml.DomainChardevSourcePty{}}}}},
	} {
		d := &libvirtxml.Domain{Name: "ns_vmi", Devices: &libvirtxml.DomainDeviceList{Serials: c.serials}}
		got, err := serialSocket(d)
		var fe *field.Error
		switch {
		case c.want != "" && (err != nil || got != c.want):
			t.Errorf("%s: %q, %v; want %q", c.name, got, err, c.want)
		case c.want == "" && err == nil:
			t.Errorf("%s: %q, want an error", c.name, got)
		case c.invalid && (!errors.Is(err, ErrInvalid) || !errors.As(err, &fe) || fe.Field != "spec.domain.devices.autoattachSerialConsole"):
			t.Errorf("%s: %v, want an *InvalidError at spec.domain.devices.autoattachSerialConsole", c.name, err)
		case !c.invalid && errors.Is(err, ErrInvalid):
			t.Errorf("%s: %v, want an error that is not ErrInvalid", c.name, err)
		}
	}
}

func TestVNCIndex(t *testing.T) {
	spice := libvirtxml.DomainGraphic{Spice: &libvirtxml.DomainGraphicSpice{}}
	vnc := libvirtxml.DomainGraphic{VNC: &libvirtxml.DomainGraphicVNC{}}
	if i, err := vncIndex(&libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{Graphics: []libvirtxml.DomainGraphic{spice, vnc}}}); err != nil || i != 1 {
		t.Errorf("VNC after SPICE: index %d, %v; want 1", i, err)
	}
	var fe *field.Error
	for _, d := range []*libvirtxml.Domain{{}, {Devices: &libvirtxml.DomainDeviceList{Graphics: []libvirtxml.DomainGraphic{spice}}}} {
		if _, err := vncIndex(d); !errors.Is(err, ErrInvalid) || !errors.As(err, &fe) || fe.Field != "spec.domain.devices.autoattachGraphicsDevice" {
			t.Errorf("no VNC in %+v: %v, want an *InvalidError at spec.domain.devices.autoattachGraphicsDevice", d.Devices, err)
		}
	}
}

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
