package launcher_test

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/streamtest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// guestShell is a running test guest's console shell, to ask it things.
type guestShell struct {
	t   testing.TB
	rw  io.ReadWriteCloser
	out *streamtest.Transcript
	at  int
}

// questions numbers the questions of every shell, so that no answer's
// markers are those of an earlier question.
var questions atomic.Int32

// attachShell opens vmi's console through l, taking it over from any other
// client.
func attachShell(t testing.TB, l *launcher.Launcher, vmi *v1.VirtualMachineInstance) *guestShell {
	t.Helper()
	rw, err := l.Console(context.Background(), vmi, launcher.ConsoleOptions{Force: true})
	if err != nil {
		t.Fatalf("Console: %v", err)
	}
	t.Cleanup(func() { rw.Close() })
	return &guestShell{t: t, rw: rw, out: streamtest.ReadAll(rw)}
}

// bootShell attaches to vmi's console, unpauses it and waits for its shell.
func bootShell(t testing.TB, e *env, vmi *v1.VirtualMachineInstance) *guestShell {
	t.Helper()
	g := attachShell(t, e.l, vmi)
	if err := e.l.Unpause(context.Background(), vmi); err != nil {
		t.Fatalf("Unpause: %v", err)
	}
	g.waitBoot()
	return g
}

// waitBoot waits until the guest printed, since the console was opened,
// that its shell is ready.
func (g *guestShell) waitBoot() {
	g.t.Helper()
	g.at = g.out.WaitFor(g.t, testguest.ShellMarker, g.at, bootTimeout)
	g.at = g.out.WaitFor(g.t, "# ", g.at, time.Minute)
}

// ask types cmd and returns what it printed, without surrounding space.
// The markers around the answer are computed by the guest's shell, so the
// typed line (echoed) does not hold them.
func (g *guestShell) ask(cmd string) string {
	g.t.Helper()
	n := questions.Add(1)
	begin, end := fmt.Sprintf("B%dZ", n*7), fmt.Sprintf("E%dZ", n*7)
	streamtest.TypeLine(g.t, g.rw, fmt.Sprintf("echo B$((%d*7))Z; %s; echo; echo E$((%d*7))Z", n, cmd, n))
	from := g.out.WaitFor(g.t, begin, g.at, 2*time.Minute)
	g.at = g.out.WaitFor(g.t, end, from, 2*time.Minute)
	return strings.TrimSpace(g.out.String()[from : g.at-len(end)])
}

// until asks cmd until its answer satisfies ok, for up to timeout, and
// returns the last answer and how long it took.
func (g *guestShell) until(cmd string, timeout time.Duration, ok func(string) bool) (string, time.Duration) {
	g.t.Helper()
	began := time.Now()
	for {
		out := g.ask(cmd)
		if ok(out) {
			return out, time.Since(began)
		}
		if time.Since(began) > timeout {
			g.t.Fatalf("the guest did not answer as wanted to %q within %s; last answer:\n%s", cmd, timeout, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// guestFacts are what the guest says of itself.
type guestFacts struct {
	bootID string
	uptime float64
	mac    string
}

// facts asks the guest its boot ID, uptime and first NIC's MAC.
func (g *guestShell) facts() guestFacts {
	g.t.Helper()
	f := strings.Fields(g.ask("cat /proc/sys/kernel/random/boot_id /proc/uptime /sys/class/net/eth0/address"))
	if len(f) != 4 {
		g.t.Fatalf("guest facts %q: want boot ID, uptime, idle time, MAC", f)
	}
	up, err := strconv.ParseFloat(f[1], 64)
	if err != nil {
		g.t.Fatal(err)
	}
	return guestFacts{bootID: f[0], uptime: up, mac: f[3]}
}
