package testcluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Process is a program a test runs as a separate process (the node agent,
// the control plane), with its stderr collected line by line. It is killed
// at the end of the test if it still runs, and its output logged when the
// test failed.
type Process struct {
	Name string // for messages
	cmd  *exec.Cmd

	mu      sync.Mutex
	lines   []string
	changed chan struct{} // a line arrived (capacity 1)

	exited  chan struct{} // closed when the process has exited
	exitErr error         // cmd.Wait's answer, once exited is closed
}

// StartProcess starts cmd (its stderr must be unset) for tb.
func StartProcess(tb testing.TB, name string, cmd *exec.Cmd) *Process {
	tb.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	p := &Process{Name: name, cmd: cmd, changed: make(chan struct{}, 1), exited: make(chan struct{})}
	go func() {
		s := bufio.NewScanner(stderr)
		s.Buffer(make([]byte, 64<<10), 1<<20)
		for s.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, s.Text())
			p.mu.Unlock()
			select {
			case p.changed <- struct{}{}:
			default:
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
		p.exitErr = cmd.Wait() // after the last read, as exec requires
		close(p.exited)
	}()
	tb.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if tb.Failed() {
			tb.Logf("%s output:\n%s", name, p.Output())
		}
	})
	return p
}

// WaitFor returns the first line of the process's stderr that holds text
// (from the start: a line printed before the call counts).
func (p *Process) WaitFor(ctx context.Context, tb testing.TB, text string) string {
	tb.Helper()
	next := 0
	for {
		p.mu.Lock()
		lines := p.lines[next:]
		next = len(p.lines)
		p.mu.Unlock()
		for _, line := range lines {
			if strings.Contains(line, text) {
				return line
			}
		}
		select {
		case <-p.changed:
		case <-p.exited:
			p.mu.Lock()
			more := next < len(p.lines)
			p.mu.Unlock()
			if !more {
				tb.Fatalf("%s exited (%v) before logging %q:\n%s", p.Name, p.exitErr, text, p.Output())
			}
		case <-ctx.Done():
			tb.Fatalf("%s did not log %q: %v\n%s", p.Name, text, ctx.Err(), p.Output())
		}
	}
}

// Address returns the address= value of the first line that holds text.
func (p *Process) Address(ctx context.Context, tb testing.TB, text string) string {
	tb.Helper()
	line := p.WaitFor(ctx, tb, text)
	_, addr, ok := strings.Cut(line, "address=")
	if !ok {
		tb.Fatalf("no address in %q", line)
	}
	return strings.Fields(addr)[0]
}

// Stop sends the process sig and waits for it to exit; a signal other than
// SIGKILL must end it with status 0.
func (p *Process) Stop(tb testing.TB, sig os.Signal) {
	tb.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		tb.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(time.Minute):
		tb.Fatalf("%s still runs a minute after %v", p.Name, sig)
	}
	if sig != os.Kill && p.exitErr != nil {
		tb.Fatalf("%s after %v: %v (want exit 0)\n%s", p.Name, sig, p.exitErr, p.Output())
	}
}

// Wait waits for the process to exit and returns cmd.Wait's error.
func (p *Process) Wait(ctx context.Context) error {
	select {
	case <-p.exited:
		return p.exitErr
	case <-ctx.Done():
		return fmt.Errorf("%s still running: %w", p.Name, ctx.Err())
	}
}

// Output is everything the process printed on stderr so far.
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// PID is the process's id, for tests that read its use of the machine
// (/proc/PID/stat, /proc/PID/status).
func (p *Process) PID() int { return p.cmd.Process.Pid }
