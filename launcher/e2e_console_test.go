package launcher_test

// End-to-end tests of Console, VNC and stream.Server on the real libvirtd
// with the test guest. Their VMIs live in a namespace of their own, and
// boot a test guest built into an image store of their own (its init runs
// the shell these tests type into).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/png"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/stream"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/rfb"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/streamtest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// consoleNamespace holds the VMIs of the console and VNC tests.
const consoleNamespace = "vmi2libvirt-console"

// newConsoleEnv is newEnv with an image store of the test's own, holding
// the test guest as this tree builds it.
func newConsoleEnv(t testing.TB) *env {
	t.Helper()
	return newEnvWith(t, func(cfg *launcher.Config) {
		cfg.Layout.ImageStore = hosttest.Dir(t, testRoot, "images-")
		testguest.Require(t, cfg.Layout.ImageStore)
	})
}

// consoleVMI is a test guest VMI of the console namespace that starts
// paused (so that nothing it prints is missed), with extra devices lines
// (indented 6) when not empty.
func consoleVMI(t testing.TB, base, devices string) *v1.VirtualMachineInstance {
	if devices == "" {
		devices = "      {}"
	}
	vmi := decodeVMI(t, fmt.Sprintf(vmiYAML, uniqueName(base), 30, "  startStrategy: Paused\n", testguest.ActionACPI,
		"    memory:\n      guest: 128Mi\n", devices, ""))
	vmi.Namespace = consoleNamespace
	return vmi
}

// TestE2EConsole attaches to a test guest's serial console before it
// boots: the stream carries its report and its shell answers a command,
// while QEMU keeps writing the serial log; a second attachment is refused
// (ErrConsoleBusy) unless forced, and a forced one takes the console over
// (the first stream ends with ErrTakenOver, and no byte is read twice); a
// lock held by another process cannot be forced; closing the stream
// leaves the VMI Running, attachments in quick succession all succeed, and
// a new attachment answers; a cancelled
// context closes the stream; the guest powering off ends the stream with
// io.EOF, and a VMI that is not running is ErrNotRunning.
func TestE2EConsole(t *testing.T) {
	e := newConsoleEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	vmi := consoleVMI(t, "console", "")
	e.sync(t, vmi)

	first, err := e.l.Console(ctx, vmi, launcher.ConsoleOptions{})
	if err != nil {
		t.Fatalf("Console: %v", err)
	}
	defer first.Close()
	out := streamtest.ReadAll(first)
	if err := e.l.Unpause(ctx, vmi); err != nil {
		t.Fatalf("Unpause: %v", err)
	}

	// The report, from the stream; the same as in the serial log.
	at := out.WaitFor(t, testguest.EndMarker, 0, bootTimeout)
	report, err := testguest.ParseConsole(out.String())
	if err != nil {
		t.Fatalf("parse the report read from the console: %v", err)
	}
	if report.CPUs != 1 || len(report.NICs) != 1 || report.MemTotalKiB <= 0 {
		t.Errorf("report from the console stream: %+v, want 1 CPU, 1 NIC, some memory", report)
	}
	logged := e.waitConsole(t, vmi, 10*time.Second) // the log may lag (virtlogd writes it)
	if fmt.Sprint(logged) != fmt.Sprint(report) {
		t.Errorf("serial log report %+v, console stream report %+v", logged, report)
	}

	// A command typed on the console is answered there, and logged.
	at = out.WaitFor(t, testguest.ShellMarker, at, time.Minute)
	at = out.WaitFor(t, "# ", at, time.Minute)
	streamtest.TypeLine(t, first, "echo console-$((6*7))")
	out.WaitFor(t, "\nconsole-42", at, time.Minute)
	e.waitLine(t, vmi, "\nconsole-42", 10*time.Second)

	// A second attachment is refused; forced, it takes the console over.
	if _, err := e.l.Console(ctx, vmi, launcher.ConsoleOptions{}); !errors.Is(err, launcher.ErrConsoleBusy) {
		t.Fatalf("second Console: %v, want ErrConsoleBusy", err)
	}
	second, err := e.l.Console(ctx, vmi, launcher.ConsoleOptions{Force: true})
	if err != nil {
		t.Fatalf("forced Console: %v", err)
	}
	defer second.Close()
	if err := out.End(t, 10*time.Second); !errors.Is(err, launcher.ErrTakenOver) {
		t.Errorf("first stream after the take-over: %v, want ErrTakenOver", err)
	}
	if _, err := first.Write([]byte("x")); !errors.Is(err, launcher.ErrTakenOver) {
		t.Errorf("write to the first stream after the take-over: %v, want ErrTakenOver", err)
	}
	out2 := streamtest.ReadAll(second)
	streamtest.TypeLine(t, second, "echo second-$((1+1))")
	out2.WaitFor(t, "\nsecond-2", 0, time.Minute)
	if strings.Contains(out.String(), "second-") {
		t.Errorf("the first stream read what the second one typed:\n%s", out.String())
	}

	// Closing the stream detaches: the VMI runs on, and a new attachment
	// is answered.
	if err := second.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if st, err := e.l.Status(ctx, vmi); err != nil || st.Phase != v1.Running {
		t.Errorf("after detaching: phase %s (%v), want Running", st.Phase, err)
	}
	// Attaching and detaching in a row: QEMU takes the next client only
	// once it has seen the last one leave, and its queue holds one.
	for i := range 10 {
		c, err := e.l.Console(ctx, vmi, launcher.ConsoleOptions{})
		if err != nil {
			t.Fatalf("attachment %d in a row: %v", i, err)
		}
		c.Close()
	}
	third, err := e.l.Console(ctx, vmi, launcher.ConsoleOptions{})
	if err != nil {
		t.Fatalf("Console after detaching: %v", err)
	}
	out3 := streamtest.ReadAll(third)
	streamtest.TypeLine(t, third, "echo third-$((2+1))")
	out3.WaitFor(t, "\nthird-3", 0, time.Minute)
	if err := third.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := out3.End(t, 10*time.Second); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read after Close: %v, want net.ErrClosed", err)
	}

	// Another process's lock (taken here as another process would take
	// it) makes Console busy, forced or not.
	lockFile := e.layout.Paths(vmi).SerialSocket + ".lock"
	other, err := os.OpenFile(lockFile, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("open the console's lock file: %v", err)
	}
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatalf("lock the console as another process: %v", err)
	}
	if _, err := other.WriteAt([]byte("4242\n"), 0); err != nil {
		t.Fatal(err)
	}
	for _, force := range []bool{false, true} {
		_, err := e.l.Console(ctx, vmi, launcher.ConsoleOptions{Force: force})
		if !errors.Is(err, launcher.ErrConsoleBusy) || !strings.Contains(err.Error(), "process 4242") {
			t.Errorf("Console (force %v) while another process holds it: %v, want ErrConsoleBusy naming process 4242", force, err)
		}
	}
	other.Close()

	// A cancelled context closes the stream.
	cctx, ccancel := context.WithCancel(ctx)
	fourth, err := e.l.Console(cctx, vmi, launcher.ConsoleOptions{})
	if err != nil {
		t.Fatalf("Console: %v", err)
	}
	out4 := streamtest.ReadAll(fourth)
	ccancel()
	if err := out4.End(t, 10*time.Second); !errors.Is(err, context.Canceled) {
		t.Errorf("read after the context was cancelled: %v, want context.Canceled", err)
	}
	if _, err := fourth.Write([]byte("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("write after the context was cancelled: %v, want context.Canceled", err)
	}

	// The guest powers off: the attached stream ends with io.EOF, and a
	// VMI that is not running has no console.
	fifth, err := e.l.Console(ctx, vmi, launcher.ConsoleOptions{})
	if err != nil {
		t.Fatalf("Console after the context one: %v", err)
	}
	defer fifth.Close()
	out5 := streamtest.ReadAll(fifth)
	if err := e.l.Shutdown(ctx, vmi); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	out5.WaitFor(t, "power button", 0, time.Minute)
	if err := out5.End(t, time.Minute); err != io.EOF {
		t.Errorf("read once the guest powered off: %v, want io.EOF", err)
	}
	e.watch.waitPhase(t, vmi.Name, v1.Succeeded, time.Minute)
	if _, err := e.l.Console(ctx, vmi, launcher.ConsoleOptions{}); !errors.Is(err, launcher.ErrNotRunning) {
		t.Errorf("Console of a VMI that ended: %v, want ErrNotRunning", err)
	}
	if _, err := e.l.VNC(ctx, vmi); !errors.Is(err, launcher.ErrNotRunning) {
		t.Errorf("VNC of a VMI that ended: %v, want ErrNotRunning", err)
	}
}

// TestE2EConsoleRefusals: a VMI without serial console or graphics gets an
// *InvalidError naming the field; a VMI without a domain is ErrNoDomain;
// another owner's VMI is ErrConflict.
func TestE2EConsoleRefusals(t *testing.T) {
	e := newConsoleEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	vmi := consoleVMI(t, "console-none", "      autoattachSerialConsole: false\n      autoattachGraphicsDevice: false")
	e.sync(t, vmi)

	open := map[string]func(*v1.VirtualMachineInstance) (io.ReadWriteCloser, error){
		"Console": func(v *v1.VirtualMachineInstance) (io.ReadWriteCloser, error) {
			return e.l.Console(ctx, v, launcher.ConsoleOptions{})
		},
		"VNC": func(v *v1.VirtualMachineInstance) (io.ReadWriteCloser, error) { return e.l.VNC(ctx, v) },
	}
	wantField := map[string]string{
		"Console": "spec.domain.devices.autoattachSerialConsole",
		"VNC":     "spec.domain.devices.autoattachGraphicsDevice",
	}
	for what, fn := range open {
		_, err := fn(vmi)
		var ie *launcher.InvalidError
		var fe *field.Error
		if !errors.As(err, &ie) || !errors.Is(err, launcher.ErrInvalid) || !errors.As(err, &fe) || fe.Field != wantField[what] {
			t.Errorf("%s of a VMI without it: %v, want an *InvalidError at %s", what, err, wantField[what])
		} else {
			t.Logf("%s: %v", what, err)
		}

		gone := vmi.DeepCopy()
		gone.Name += "-never-synced"
		if _, err := fn(gone); !errors.Is(err, launcher.ErrNoDomain) {
			t.Errorf("%s of a VMI without a domain: %v, want ErrNoDomain", what, err)
		}
	}

	// Another owner's launcher on the same daemon.
	otherCtx, otherCancel := context.WithTimeout(ctx, 30*time.Second)
	defer otherCancel()
	other, err := launcher.New(otherCtx, launcher.Config{URI: testURI, Owner: "console-other-owner", Emulate: true, Layout: e.layout})
	if err != nil {
		t.Fatalf("second launcher: %v", err)
	}
	defer other.Close()
	if _, err := other.Console(ctx, vmi, launcher.ConsoleOptions{}); !errors.Is(err, launcher.ErrConflict) {
		t.Errorf("Console of another owner's VMI: %v, want ErrConflict", err)
	}
	if _, err := other.VNC(ctx, vmi); !errors.Is(err, launcher.ErrConflict) {
		t.Errorf("VNC of another owner's VMI: %v, want ErrConflict", err)
	}
}

// TestE2EVNC serves a booted test guest's VNC display on a loopback TCP
// port and as a WebSocket. Through each, an RFB client gets QEMU's
// handshake (version 3.8, security type None) and a ServerInit with the
// guest's VGA text mode, 720x400 (what libvirt's screenshot of the domain
// measures too), and a full framebuffer update of that size. Two shared
// clients stay together; a client asking for exclusive access disconnects
// them (QEMU's allow-exclusive policy). A WebSocket from a foreign origin
// is refused. A cancelled context closes a VNC stream.
func TestE2EVNC(t *testing.T) {
	e := newConsoleEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	vmi := consoleVMI(t, "vnc", "")
	e.sync(t, vmi)
	if err := e.l.Unpause(ctx, vmi); err != nil {
		t.Fatalf("Unpause: %v", err)
	}
	// Once the guest prints, the BIOS has set the VGA's text mode.
	e.waitLine(t, vmi, testguest.ShellMarker, bootTimeout)
	w, h := screenshotSize(t, e, vmi)
	t.Logf("libvirt's screenshot of the domain: %dx%d", w, h)
	if w != 720 || h != 400 {
		t.Errorf("screenshot %dx%d, want VGA text mode 720x400", w, h)
	}

	srv := &stream.Server{Open: func(ctx context.Context) (io.ReadWriteCloser, error) { return e.l.VNC(ctx, vmi) }}
	serveCtx, stopServing := context.WithCancel(ctx)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ws, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 2)
	go func() { served <- srv.Serve(serveCtx, tcp) }()
	go func() { served <- srv.ServeWebSocket(serveCtx, ws) }()

	// handshake connects a client, checks ServerInit and a full update.
	handshake := func(t *testing.T, conn io.ReadWriter, shared bool) {
		t.Helper()
		si, err := rfb.Handshake(conn, shared)
		if err != nil {
			t.Fatalf("RFB handshake: %v", err)
		}
		if si.Width != 720 || si.Height != 400 || si.BitsPerPixel != 32 || !strings.Contains(si.Name, domainName(vmi)) {
			t.Errorf("ServerInit %+v, want 720x400, 32 bits per pixel, named after domain %s", si, domainName(vmi))
		}
		rects, err := rfb.Framebuffer(conn, si)
		if err != nil {
			t.Fatalf("framebuffer update: %v", err)
		}
		pixels := 0
		for _, r := range rects {
			pixels += len(r.Pixels) / 4
		}
		if pixels != 720*400 {
			t.Errorf("framebuffer update of %d pixels in %d rectangles, want 720x400", pixels, len(rects))
		}
	}
	dial := func(t *testing.T) net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", tcp.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(time.Minute))
		return c
	}

	t.Run("TCP", func(t *testing.T) {
		a := dial(t)
		defer a.Close()
		handshake(t, a, true)
		b := dial(t)
		defer b.Close()
		handshake(t, b, true)
		// Both shared: a is still served.
		if _, err := rfb.Framebuffer(a, rfb.ServerInit{Width: 720, Height: 400, BitsPerPixel: 32}); err != nil {
			t.Errorf("the first shared client after a second one joined: %v", err)
		}
		// An exclusive client disconnects the others.
		c := dial(t)
		defer c.Close()
		handshake(t, c, false)
		for name, conn := range map[string]net.Conn{"first": a, "second": b} {
			_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			if n, err := io.Copy(io.Discard, conn); err != nil {
				t.Errorf("the %s shared client after an exclusive one came: %v after %d bytes, want disconnected (EOF)", name, err, n)
			}
		}
	})

	t.Run("WebSocket", func(t *testing.T) {
		url := "ws://" + ws.Addr().String() + "/websockify"
		c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{"binary"}})
		if err != nil {
			t.Fatalf("WebSocket: %v", err)
		}
		if c.Subprotocol() != "binary" {
			t.Errorf("subprotocol %q, want binary", c.Subprotocol())
		}
		conn := websocket.NetConn(ctx, c, websocket.MessageBinary)
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(time.Minute))
		handshake(t, conn, true)

		_, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"http://elsewhere.example"}}})
		if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
			code := 0
			if resp != nil {
				code = resp.StatusCode
			}
			t.Errorf("WebSocket from a foreign origin: err %v, status %d, want refused with 403", err, code)
		}
	})

	t.Run("ContextClosesStream", func(t *testing.T) {
		sctx, scancel := context.WithCancel(ctx)
		s, err := e.l.VNC(sctx, vmi)
		if err != nil {
			t.Fatalf("VNC: %v", err)
		}
		defer s.Close()
		ver := make([]byte, len(rfb.Version))
		if _, err := io.ReadFull(s, ver); err != nil || string(ver) != rfb.Version {
			t.Fatalf("first bytes of the VNC stream: %q, %v; want %q", ver, err, rfb.Version)
		}
		out := streamtest.ReadAll(s)
		scancel()
		if err := out.End(t, 10*time.Second); !errors.Is(err, context.Canceled) {
			t.Errorf("read after the context was cancelled: %v, want context.Canceled", err)
		}
	})

	stopServing()
	for range 2 {
		if err := <-served; err != nil {
			t.Errorf("serving ended with %v, want nil once its context ended", err)
		}
	}
	if _, err := net.Dial("tcp", tcp.Addr().String()); err == nil {
		t.Errorf("the TCP port still accepts after Serve returned")
	}
}

// screenshotSize measures the domain's screen with libvirt's own
// screenshot (QEMU's screendump), as the test's independent witness.
func screenshotSize(t *testing.T, e *env, vmi *v1.VirtualMachineInstance) (int, int) {
	t.Helper()
	dom, err := e.conn.LookupDomainByName(domainName(vmi))
	if err != nil {
		t.Fatal(err)
	}
	defer dom.Free()
	st, err := e.conn.NewStream(0)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Free()
	mime, err := dom.Screenshot(st, 0, 0)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	var img bytes.Buffer
	if err := st.RecvAll(func(_ *libvirt.Stream, b []byte) (int, error) { return img.Write(b) }); err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	_ = st.Finish()
	if mime != "image/png" {
		t.Fatalf("screenshot of type %s, want image/png", mime)
	}
	cfg, err := png.DecodeConfig(&img)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	return cfg.Width, cfg.Height
}
