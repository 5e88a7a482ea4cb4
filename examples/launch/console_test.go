package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/rfb"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// output collects what a process writes, for tests that wait for text.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// waitFor waits until the output matches re at or after offset from, and
// returns the match's submatches and the offset past it.
func (o *output) waitFor(t *testing.T, what string, re *regexp.Regexp, from int, timeout time.Duration, others ...*output) ([]string, int) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := o.String()
		if loc := re.FindStringSubmatchIndex(s[from:]); loc != nil {
			var subs []string
			for i := 0; i < len(loc); i += 2 {
				subs = append(subs, s[from+loc[i]:from+loc[i+1]])
			}
			return subs, from + loc[1]
		}
		if time.Now().After(deadline) {
			msg := ""
			for _, other := range others {
				msg += "\nand:\n" + other.String()
			}
			t.Fatalf("no %s within %s; output:\n%s%s", what, timeout, s, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestLaunchConsoleAndVNC runs the command with -console, -vnc and -vnc-ws
// on a test guest, stdin and stdout being pipes. It prints the VNC
// addresses; a VNC client gets the guest's 720x400 VGA text screen over
// TCP and over the WebSocket; the console shows the guest's report and
// its shell answers what is written to stdin; Ctrl-] detaches and the VMI
// keeps running; then SIGINT stops it gracefully: phase=Succeeded, exit 0,
// no domain left. Without libvirtd it skips, unless CI is set.
func TestLaunchConsoleAndVNC(t *testing.T) {
	if c, err := libvirt.NewConnect(launcher.DefaultURI); err != nil {
		hosttest.Missing(t, "libvirtd unreachable: %v", err)
	} else {
		_, _ = c.Close()
	}
	hosttest.LockLibvirt(t, false)
	root := "/var/lib/vmi2libvirt/e2e-launch-console-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	store := filepath.Join(root, "images")
	testguest.Require(t, store)
	if err := os.Chmod(root, 0o711); err != nil {
		t.Fatal(err)
	}
	sample, err := os.ReadFile(filepath.Join("..", "vmis", "vmi-tiny.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	name := "launch-console-" + strconv.Itoa(os.Getpid())
	yaml := strings.Replace(string(sample), "name: tiny", "name: "+name, 1)
	yaml = strings.Replace(yaml, "namespace: default", "namespace: vmi2libvirt-console", 1)
	vmiFile := filepath.Join(t.TempDir(), "tiny.yaml")
	if err := os.WriteFile(vmiFile, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "launch")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	cmd := exec.Command(bin, "-emulate", "-state-dir", filepath.Join(root, "vmis"), "-image-store", store,
		"-console", "-vnc", "127.0.0.1:0", "-vnc-ws", "127.0.0.1:0", vmiFile)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr := &output{}, &output{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	addr := regexp.MustCompile(`VNC of vmi2libvirt-console/` + name + ` on (127\.0\.0\.1:\d+) `)
	wsAddr := regexp.MustCompile(`VNC of vmi2libvirt-console/` + name + ` as a WebSocket on (ws://127\.0\.0\.1:\d+/) `)
	m, _ := stderr.waitFor(t, "VNC address", addr, 0, time.Minute)
	tcp := m[1]
	m, _ = stderr.waitFor(t, "WebSocket address", wsAddr, 0, time.Minute)
	ws := m[1]

	// The console: the report, the shell, a command's answer.
	_, at := stdout.waitFor(t, "phase=Running", regexp.MustCompile(`(?m)^phase=Running`), 0, time.Minute, stderr)
	stderr.waitFor(t, "the console attached", regexp.MustCompile(`connected to the console of vmi2libvirt-console/`+name), 0, time.Minute)
	_, at = stdout.waitFor(t, "the report", regexp.MustCompile(regexp.QuoteMeta(testguest.EndMarker)), at, 90*time.Second, stderr)
	_, at = stdout.waitFor(t, "the shell", regexp.MustCompile(regexp.QuoteMeta(testguest.ShellMarker)+`(?s:.*)# `), at, time.Minute, stderr)
	if _, err := io.WriteString(stdin, "echo launch-$((5*5))\n"); err != nil {
		t.Fatal(err)
	}
	_, at = stdout.waitFor(t, "the answer", regexp.MustCompile(`\nlaunch-25`), at, time.Minute, stderr)

	// VNC, over TCP and the WebSocket, while the console is attached.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := net.Dial("tcp", tcp)
	if err != nil {
		t.Fatalf("VNC port: %v", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(time.Minute))
	wsc, _, err := websocket.Dial(ctx, ws, nil)
	if err != nil {
		t.Fatalf("VNC WebSocket: %v", err)
	}
	wsConn := websocket.NetConn(ctx, wsc, websocket.MessageBinary)
	defer wsConn.Close()
	for what, c := range map[string]io.ReadWriter{"TCP": conn, "WebSocket": wsConn} {
		si, err := rfb.Handshake(c, true)
		if err != nil {
			t.Fatalf("VNC over %s: %v", what, err)
		}
		if si.Width != 720 || si.Height != 400 {
			t.Errorf("VNC over %s: ServerInit %+v, want 720x400", what, si)
		}
		if _, err := rfb.Framebuffer(c, si); err != nil {
			t.Errorf("VNC over %s: framebuffer: %v", what, err)
		}
	}

	// Ctrl-] detaches; the VMI keeps running.
	if _, err := stdin.Write([]byte{0x1d}); err != nil {
		t.Fatal(err)
	}
	stderr.waitFor(t, "the detach", regexp.MustCompile(`detached from the console of vmi2libvirt-console/`+name+`; it keeps running`), 0, 30*time.Second)
	c, err := libvirt.NewConnect(launcher.DefaultURI)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	domName := "vmi2libvirt-console_" + name
	if dom, err := c.LookupDomainByName(domName); err != nil {
		t.Errorf("after the detach: %v", err)
	} else {
		state, _, err := dom.GetState()
		_ = dom.Free()
		if err != nil || state != libvirt.DOMAIN_RUNNING {
			t.Errorf("after the detach the domain is in state %d (%v), want running", state, err)
		}
	}
	if _, err := io.WriteString(stdin, "echo not-sent\n"); err != nil {
		t.Fatal(err)
	}

	// Interrupted, launch stops the VMI gracefully.
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	stdout.waitFor(t, "phase=Succeeded", regexp.MustCompile(`(?m)^phase=Succeeded`), at, time.Minute, stderr)
	if err := cmd.Wait(); err != nil {
		t.Errorf("launch exited with %v; stderr:\n%s", err, stderr)
	}
	if strings.Contains(stdout.String(), "not-sent") {
		t.Errorf("a line written after the detach reached the guest:\n%s", stdout)
	}
	if dom, err := c.LookupDomainByName(domName); err == nil {
		_ = dom.Free()
		t.Errorf("domain %s left behind", domName)
	}
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout, stderr)
}
