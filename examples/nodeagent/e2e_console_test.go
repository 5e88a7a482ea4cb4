package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/agent"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/rfb"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/streamtest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// TestE2EConsoleVNC runs two VMIs on an agent started with
// -stream-address 127.0.0.1 and reaches them as the package documents:
// their entries at /consoles, then the ports those name. Through the
// console port the test reads the test guest's report (the VMI starts
// paused and is resumed once the port is attached) and types a command
// the guest's shell answers; a second client of the console is
// disconnected while the first holds it. Through the VNC port, and its
// WebSocket port, an RFB handshake and a full framebuffer update give the
// guest's VGA text mode, 720x400; the WebSocket port takes a browser page
// of the origin -stream-origins names and refuses one of another (403).
// A VMI with autoattachSerialConsole and
// autoattachGraphicsDevice false has no port, and its entry holds the
// launcher's errors naming those fields. Stopping the agent closes the
// ports; the next agent of the node opens new ones for the same guests; a
// guest that powers off (its object stays, Succeeded) and a VMI deleted
// have their ports closed and their entries dropped.
func TestE2EConsoleVNC(t *testing.T) {
	w := newWorld(t)
	ns, node, dir := w.namespace(t, "console"), uniqueName("node"), stateDir(t)
	a := w.startNode(t, node, dir, "-stream-address", "127.0.0.1", "-stream-origins", "novnc.example:6080")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	paused := virtv1.StartStrategyPaused
	tiny := bound(guestVMI(ns, "tiny", 60, testguest.ActionACPI), node)
	tiny.Spec.StartStrategy = &paused
	off := false
	headless := bound(guestVMI(ns, "headless", 60, testguest.ActionACPI), node)
	headless.Spec.Domain.Devices.AutoattachSerialConsole = &off
	headless.Spec.Domain.Devices.AutoattachGraphicsDevice = &off
	plain := bound(guestVMI(ns, "plain", 60, testguest.ActionACPI), node)
	w.create(t, tiny)
	w.create(t, headless)
	w.create(t, plain)

	// The entry of the paused VMI, found as an operator finds it.
	entry := a.waitStreams(t, ns, "tiny", 3*time.Minute)
	if vmi := w.get(t, ns, "tiny"); vmi == nil || entry.UID != vmi.UID {
		t.Errorf("entry %+v, want the UID of VMI %s/tiny", entry, ns)
	}
	for what, addr := range map[string]string{"console": entry.Console, "vnc": entry.VNC, "vncWebSocket": entry.VNCWebSocket} {
		if host, _, err := net.SplitHostPort(addr); err != nil || host != "127.0.0.1" {
			t.Errorf("%s address %q, want 127.0.0.1:PORT", what, addr)
		}
	}
	if entry.ConsoleError != "" || entry.VNCError != "" {
		t.Errorf("entry %+v has errors, want none", entry)
	}

	// The console: attached before the guest runs, it carries the report;
	// the shell answers.
	console := dialStream(t, entry.Console)
	out := streamtest.ReadAll(console)
	a.waitFor(ctx, t, "address="+entry.Console+" client=") // the agent attached the client ("client connected")
	resume(t, w, ns, "tiny")
	at := out.WaitFor(t, testguest.EndMarker, 0, 3*time.Minute)
	report, err := testguest.ParseConsole(out.String())
	if err != nil {
		t.Fatalf("parse the report read from the console port: %v\n%s", err, out.String())
	}
	if report.CPUs != 1 || len(report.NICs) != 1 || report.MemTotalKiB <= 0 {
		t.Errorf("report from the console port: %+v, want 1 CPU, 1 NIC, some memory", report)
	}
	at = out.WaitFor(t, testguest.ShellMarker, at, time.Minute)
	at = out.WaitFor(t, "# ", at, time.Minute)
	streamtest.TypeLine(t, console, "echo agent-$((6*7))")
	at = out.WaitFor(t, "\nagent-42", at, time.Minute)

	// One attachment at a time: a second client is disconnected at once,
	// and the first one is still answered.
	second := dialStream(t, entry.Console)
	secondOut := streamtest.ReadAll(second)
	if err := secondOut.End(t, 30*time.Second); err != io.EOF {
		t.Errorf("second console client: read %v, want io.EOF (disconnected: the console is busy)", err)
	}
	streamtest.TypeLine(t, console, "echo still-$((1+2))")
	out.WaitFor(t, "\nstill-3", at, time.Minute)

	// VNC, raw and as a WebSocket: the guest's text mode.
	vnc := dialStream(t, entry.VNC)
	vncHandshake(t, vnc, ns)
	vnc.Close()
	ws, _, err := websocket.Dial(ctx, "ws://"+entry.VNCWebSocket+"/", &websocket.DialOptions{Subprotocols: []string{"binary"}})
	if err != nil {
		t.Fatalf("WebSocket to %s: %v", entry.VNCWebSocket, err)
	}
	wsConn := websocket.NetConn(ctx, ws, websocket.MessageBinary)
	vncHandshake(t, wsConn, ns)
	wsConn.Close()
	// A browser page of the origin -stream-origins names may open the
	// WebSocket (noVNC served there); a page of any other site may not.
	for origin, allowed := range map[string]bool{"http://novnc.example:6080": true, "https://elsewhere.example": false} {
		ws, resp, err := websocket.Dial(ctx, "ws://"+entry.VNCWebSocket+"/", &websocket.DialOptions{
			Subprotocols: []string{"binary"}, HTTPHeader: http.Header{"Origin": {origin}}})
		switch {
		case allowed && err != nil:
			t.Errorf("WebSocket from a page of %s (in -stream-origins): %v", origin, err)
		case !allowed && err == nil:
			t.Errorf("WebSocket from a page of %s (not in -stream-origins) accepted", origin)
		case !allowed && (resp == nil || resp.StatusCode != http.StatusForbidden):
			t.Errorf("WebSocket from a page of %s: %v, want 403 Forbidden", origin, err)
		}
		if ws != nil {
			vncHandshake(t, websocket.NetConn(ctx, ws, websocket.MessageBinary), ns)
			ws.CloseNow()
		}
	}

	// The VMI without a serial console or graphics: no port, the
	// launcher's errors.
	noPorts := a.waitStreams(t, ns, "headless", 3*time.Minute)
	if noPorts.Console != "" || noPorts.VNC != "" || noPorts.VNCWebSocket != "" {
		t.Errorf("entry %+v of a VMI without serial console and graphics has ports", noPorts)
	}
	if !strings.Contains(noPorts.ConsoleError, "spec.domain.devices.autoattachSerialConsole") {
		t.Errorf("consoleError %q, want the launcher's error naming spec.domain.devices.autoattachSerialConsole", noPorts.ConsoleError)
	}
	if !strings.Contains(noPorts.VNCError, "spec.domain.devices.autoattachGraphicsDevice") {
		t.Errorf("vncError %q, want the launcher's error naming spec.domain.devices.autoattachGraphicsDevice", noPorts.VNCError)
	}
	var all []agent.VMIStreams
	a.getJSON(t, "/consoles", http.StatusOK, &all)
	a.waitStreams(t, ns, "plain", 3*time.Minute)
	a.getJSON(t, "/consoles", http.StatusOK, &all)
	if len(all) != 3 || all[0].Name != "headless" || all[1].Name != "plain" || all[2].Name != "tiny" || all[2].Console != entry.Console {
		t.Errorf("/consoles: %+v, want headless, plain and tiny, in that order", all)
	}

	// Stopping the agent closes the ports, and the attached client.
	a.stop(t, syscall.SIGTERM)
	if err := out.End(t, 30*time.Second); err == nil {
		t.Error("console client still reading after the agent stopped")
	}
	for _, addr := range []string{entry.Console, entry.VNC, entry.VNCWebSocket} {
		refused(t, addr)
	}

	// The next agent of the node opens ports of its own for the same
	// guest, which still answers.
	a = w.startNode(t, node, dir, "-stream-address", "127.0.0.1")
	entry = a.waitStreams(t, ns, "tiny", time.Minute)
	console = dialStream(t, entry.Console)
	out = streamtest.ReadAll(console)
	a.waitFor(ctx, t, "address="+entry.Console+" client=")
	streamtest.TypeLine(t, console, "echo again-$((2+3))")
	out.WaitFor(t, "\nagain-5", 0, time.Minute)

	// A guest that powers off (told so on its console) closes its ports;
	// its object stays, Succeeded.
	plainEntry := a.waitStreams(t, ns, "plain", time.Minute)
	plainConsole := dialStream(t, plainEntry.Console)
	plainOut := streamtest.ReadAll(plainConsole)
	a.waitFor(ctx, t, "address="+plainEntry.Console+" client=")
	streamtest.TypeLine(t, plainConsole, "poweroff -f")
	if err := plainOut.End(t, 2*time.Minute); err != io.EOF {
		t.Errorf("console client once the guest powered off: read %v, want io.EOF", err)
	}
	w.waitPhase(t, ns, "plain", virtv1.Succeeded, time.Minute)
	a.waitNoStreams(t, ns, "plain", time.Minute)
	for _, addr := range []string{plainEntry.Console, plainEntry.VNC, plainEntry.VNCWebSocket} {
		refused(t, addr)
	}

	// Deleting the VMI: the guest powers off, the client is disconnected,
	// the ports close and the entry goes.
	if err := w.client.Delete(ctx, w.get(t, ns, "tiny")); err != nil {
		t.Fatal(err)
	}
	if err := out.End(t, 2*time.Minute); err != io.EOF {
		t.Errorf("console client once the VMI was deleted: read %v, want io.EOF", err)
	}
	a.waitNoStreams(t, ns, "tiny", time.Minute)
	for _, addr := range []string{entry.Console, entry.VNC, entry.VNCWebSocket} {
		refused(t, addr)
	}
	w.waitGone(t, ns, "tiny", 2*time.Minute)
	if err := w.client.Delete(ctx, w.get(t, ns, "headless")); err != nil {
		t.Fatal(err)
	}
	w.waitGone(t, ns, "headless", 2*time.Minute)
	if err := w.client.Delete(ctx, w.get(t, ns, "plain")); err != nil {
		t.Fatal(err)
	}
	w.waitGone(t, ns, "plain", 2*time.Minute)
	a.getJSON(t, "/consoles", http.StatusOK, &all)
	if len(all) != 0 {
		t.Errorf("/consoles after both VMIs were deleted: %+v, want none", all)
	}
}

// TestE2EConsoleOff: an agent without -stream-address opens no port and
// says at /consoles how to turn them on.
func TestE2EConsoleOff(t *testing.T) {
	w := newWorld(t)
	a := w.startNode(t, uniqueName("node"), stateDir(t))
	var body struct{ Error string }
	a.getJSON(t, "/consoles", http.StatusNotFound, &body)
	if !strings.Contains(body.Error, "-stream-address") {
		t.Errorf("/consoles of an agent without ports: %q, want how to turn them on", body.Error)
	}
}

// getJSON GETs path from the agent's HTTP server, wants status, and
// decodes the JSON body into v.
func (a *agentProcess) getJSON(t testing.TB, path string, status int, v any) {
	t.Helper()
	code, body := a.get(t, path)
	if code != status {
		t.Fatalf("GET %s: %d, want %d\n%s", path, code, status, body)
	}
	if err := json.Unmarshal([]byte(body), v); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
}

// waitStreams waits until /consoles/NS/NAME has the VMI's entry.
func (a *agentProcess) waitStreams(t testing.TB, ns, name string, timeout time.Duration) agent.VMIStreams {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		code, body := a.get(t, "/consoles/"+ns+"/"+name)
		if code == http.StatusOK {
			var e agent.VMIStreams
			if err := json.Unmarshal([]byte(body), &e); err != nil {
				t.Fatalf("/consoles/%s/%s: %v\n%s", ns, name, err, body)
			}
			if e.Namespace != ns || e.Name != name {
				t.Fatalf("/consoles/%s/%s: entry of %s/%s", ns, name, e.Namespace, e.Name)
			}
			return e
		}
		if code != http.StatusNotFound || time.Now().After(deadline) {
			t.Fatalf("/consoles/%s/%s: %d within %s\n%s", ns, name, code, timeout, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitNoStreams waits until /consoles/NS/NAME answers 404.
func (a *agentProcess) waitNoStreams(t testing.TB, ns, name string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		code, body := a.get(t, "/consoles/"+ns+"/"+name)
		if code == http.StatusNotFound {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/consoles/%s/%s still %d after %s\n%s", ns, name, code, timeout, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// dialStream connects to a stream port; the connection is closed at the
// end of the test.
func dialStream(t testing.TB, addr string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		t.Fatalf("connect to %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// refused fails the test unless a connection to addr is refused.
func refused(t testing.TB, addr string) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err == nil {
		conn.Close()
		t.Errorf("%s still accepts connections", addr)
		return
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("connect to %s: %v, want connection refused", addr, err)
	}
}

// resume resumes the VMI's paused domain, as virsh resume does.
func resume(t testing.TB, w *world, ns, name string) {
	t.Helper()
	dom, err := w.conn.LookupDomainByName(domainName(ns, name))
	if err != nil {
		t.Fatal(err)
	}
	defer dom.Free()
	if err := dom.Resume(); err != nil {
		t.Fatalf("resume %s: %v", domainName(ns, name), err)
	}
}

// vncHandshake runs an RFB handshake and a full framebuffer update on
// conn: the guest's VGA text mode, 720x400, of a domain of namespace ns.
func vncHandshake(t testing.TB, conn io.ReadWriter, ns string) {
	t.Helper()
	si, err := rfb.Handshake(conn, true)
	if err != nil {
		t.Fatalf("RFB handshake: %v", err)
	}
	if si.Width != 720 || si.Height != 400 || si.BitsPerPixel != 32 || !strings.Contains(si.Name, domainName(ns, "tiny")) {
		t.Errorf("ServerInit %+v, want 720x400, 32 bits per pixel, named after domain %s", si, domainName(ns, "tiny"))
	}
	rects, err := rfb.Framebuffer(conn, si)
	if err != nil {
		t.Fatalf("framebuffer update: %v", err)
	}
	covered := 0
	for _, r := range rects {
		covered += int(r.Width) * int(r.Height)
	}
	if covered != 720*400 {
		t.Errorf("framebuffer update covers %d pixels, want 720x400", covered)
	}
}
