package cmdutil

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

// TestForwardInput: what comes before Ctrl-] reaches the console, nothing
// after it, and reading stops there (the rest stays for whoever reads
// next).
func TestForwardInput(t *testing.T) {
	for _, c := range []struct{ in, sent, left string }{
		{in: "ls\r\x1dmore", sent: "ls\r", left: "more"},
		{in: "\x1d", sent: "", left: ""},
		{in: "no escape\r", sent: "no escape\r", left: ""},
		{in: "a\x03b\x1d\x1d", sent: "a\x03b", left: "\x1d"},
	} {
		// One byte at a time, so that what follows Ctrl-] is not read.
		in := strings.NewReader(c.in)
		var sent bytes.Buffer
		forwardInput(iotest.OneByteReader(in), &sent)
		left, _ := io.ReadAll(in)
		if sent.String() != c.sent || string(left) != c.left {
			t.Errorf("%q: sent %q, left %q; want %q, %q", c.in, sent.String(), left, c.sent, c.left)
		}
	}
	// Within one read, the bytes before Ctrl-] are sent.
	var sent bytes.Buffer
	forwardInput(strings.NewReader("echo hi\r\x1decho no\r"), &sent)
	if sent.String() != "echo hi\r" {
		t.Errorf("one read: sent %q, want %q", sent.String(), "echo hi\r")
	}
}

// TestListenLoopback: only loopback addresses are served.
func TestListenLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:0": true, "localhost:0": true, "[::1]:0": true, "127.0.0.2:0": true,
		"0.0.0.0:0": false, ":0": false, "[::]:0": false, "192.0.2.1:5900": false, "example.com:5900": false, "127.0.0.1": false,
	} {
		ln, err := ListenLoopback("-vnc", addr)
		if ln != nil {
			ln.Close()
		}
		if ok && err != nil && !strings.Contains(err.Error(), "cannot assign") {
			t.Errorf("%s: %v, want served", addr, err)
		}
		if !ok && err == nil {
			t.Errorf("%s: served, want refused", addr)
		}
	}
}

// TestLogger: warnings are always written, steps only when verbose, and
// each line's time is "t=", a duration since the logger was made.
func TestLogger(t *testing.T) {
	for _, verbose := range []bool{false, true} {
		var out bytes.Buffer
		log := Logger(&out, verbose)
		log.Debug("a step", "vmi", "default/tiny")
		log.Warn("slow libvirt")
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		want := []string{`level=WARN msg="slow libvirt"`}
		if verbose {
			want = []string{`level=DEBUG msg="a step" vmi=default/tiny`, `level=WARN msg="slow libvirt"`}
		}
		if len(lines) != len(want) {
			t.Fatalf("verbose %v: wrote %q, want %d lines", verbose, out.String(), len(want))
		}
		for i, line := range lines {
			at, rest, _ := strings.Cut(line, " ")
			d, err := time.ParseDuration(strings.TrimPrefix(at, "t="))
			if !strings.HasPrefix(at, "t=") || err != nil || d < 0 || rest != want[i] {
				t.Errorf("verbose %v: line %q, want t=DURATION %s", verbose, line, want[i])
			}
		}
	}
}
