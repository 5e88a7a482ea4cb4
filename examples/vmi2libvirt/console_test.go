//go:build cgo

package main

import (
	"bufio"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/rfb"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/streamtest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// TestConsoleAndVNC runs the test guest with run, then attaches to its
// serial console as a user would (a command typed to the guest's shell is
// answered; Ctrl-] detaches and the VMI runs on) and serves its VNC display
// on a loopback port, where an RFB handshake gets QEMU's 720x400 text-mode
// framebuffer.
func TestConsoleAndVNC(t *testing.T) {
	name, stateDir, flags := guestVMI(t, "console")
	tiny := strings.Replace(sample(t, "../vmis/vmi-tiny.yaml"), "name: tiny", "name: "+name, 1)
	expect(t, exitOK, tiny, append([]string{"run", "--emulate", "-"}, flags...)...)
	serial := filepath.Join(stateDir, "default_"+name, "serial0.log")
	waitSerial(t, serial, testguest.ShellMarker)

	// The console: type a command, read its answer, detach with Ctrl-].
	console := exec.Command(binary, append([]string{"console", name}, flags...)...)
	stdin, err := console.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdoutPipe, err := console.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderrPipe, err := console.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := console.Start(); err != nil {
		t.Fatal(err)
	}
	stdout, stderr := streamtest.ReadAll(stdoutPipe), streamtest.ReadAll(stderrPipe)
	stderr.WaitFor(t, "connected to the console", 0, time.Minute)
	if _, err := io.WriteString(stdin, "echo cli-console-$((6*7))\r"); err != nil {
		t.Fatal(err)
	}
	stdout.WaitFor(t, "cli-console-42", 0, time.Minute)
	if _, err := stdin.Write([]byte{0x1d}); err != nil {
		t.Fatal(err)
	}
	// Both pipes are read to their end before Wait closes them.
	stdout.End(t, time.Minute)
	stderr.End(t, time.Minute)
	if err := console.Wait(); err != nil || !strings.Contains(stderr.String(), "it keeps running") {
		t.Fatalf("console after Ctrl-]: %v\n%s", err, stderr.String())
	}
	if st := statusJSON(t, append([]string{name}, flags...)...); st.Phase != "Running" {
		t.Errorf("after detaching: phase %s, want Running", st.Phase)
	}
	if b, _ := os.ReadFile(serial); !strings.Contains(string(b), "cli-console-42") {
		t.Error("the serial log was not written while the console was attached")
	}

	// VNC on a loopback port; a non-loopback address is a usage error.
	r := expect(t, exitUsage, "", append([]string{"vnc", name, "--listen", "0.0.0.0:0"}, flags...)...)
	if !strings.Contains(r.stderr, "not a loopback address") {
		t.Errorf("vnc on 0.0.0.0: %s", r.stderr)
	}
	vnc := exec.Command(binary, append([]string{"vnc", name, "--listen", "127.0.0.1:0"}, flags...)...)
	vncErr, err := vnc.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := vnc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = vnc.Process.Kill(); _ = vnc.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(vncErr)
		for sc.Scan() {
			if _, a, ok := strings.Cut(sc.Text(), " on "); ok && strings.HasPrefix(sc.Text(), "VNC of ") {
				addr <- a
			}
		}
	}()
	var at string
	select {
	case at = <-addr:
	case <-time.After(time.Minute):
		t.Fatal("vnc printed no address")
	}
	conn, err := net.DialTimeout("tcp", at, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	si, err := rfb.Handshake(conn, true)
	if err != nil {
		t.Fatal(err)
	}
	if si.Width != 720 || si.Height != 400 {
		t.Errorf("framebuffer %dx%d, want QEMU's VGA text mode, 720x400", si.Width, si.Height)
	}
	if err := vnc.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := vnc.Wait(); err != nil {
		t.Errorf("vnc after Ctrl-C: %v", err)
	}
}
