package streamtest

import (
	"bytes"
	"io"
	"testing"
	"time"
)

// TestTranscript: text written in pieces is found across the pieces, from
// an offset on; the end of the stream is reported with its error.
func TestTranscript(t *testing.T) {
	r, w := io.Pipe()
	tr := ReadAll(r)
	go func() {
		for _, piece := range []string{"boot", "ing\nready\n# ", "echo", " x\nx\n"} {
			_, _ = io.WriteString(w, piece)
			time.Sleep(5 * time.Millisecond)
		}
		_ = w.CloseWithError(io.ErrUnexpectedEOF)
	}()
	at := tr.WaitFor(t, "booting\nready", 0, 10*time.Second)
	if at != len("booting\nready") {
		t.Errorf("WaitFor returned offset %d, want %d", at, len("booting\nready"))
	}
	if at = tr.WaitFor(t, "x\n", at, 10*time.Second); at != len("booting\nready\n# echo x\n") {
		t.Errorf("WaitFor of the first %q after the prompt returned offset %d", "x\n", at)
	}
	if err := tr.End(t, 10*time.Second); err != io.ErrUnexpectedEOF {
		t.Errorf("End: %v, want the writer's error", err)
	}
	if got, want := tr.String(), "booting\nready\n# echo x\nx\n"; got != want {
		t.Errorf("transcript %q, want %q", got, want)
	}
}

func TestTypeLine(t *testing.T) {
	var b bytes.Buffer
	TypeLine(t, &b, "uname -a")
	if b.String() != "uname -a\n" {
		t.Errorf("typed %q", b.String())
	}
}
