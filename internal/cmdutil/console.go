package cmdutil

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/term"
)

// EscapeByte is Ctrl-], the byte that detaches the terminal from a
// console, as in virsh console and virtctl console.
const EscapeByte = 0x1d

// AttachEnd says why Attach returned.
type AttachEnd int

// Why Attach returns.
const (
	// Detached: the user typed Ctrl-] (or the input ended); the VMI runs on.
	Detached AttachEnd = iota
	// ConsoleClosed: the console's stream ended: the guest's QEMU exited.
	ConsoleClosed
	// Canceled: the context ended.
	Canceled
)

// Attach connects a terminal to a console stream until the user types
// Ctrl-] on in, the stream ends, or ctx ends; it closes the stream. in
// goes to the console byte for byte — in raw mode when it is a terminal,
// so that Ctrl-C is the guest's — and the console's output goes to out.
// Attach returns when what the guest wrote last is on out; out then ends
// with a newline, so that what the caller prints next starts a line.
func Attach(ctx context.Context, console io.ReadWriteCloser, in *os.File, out io.Writer) (AttachEnd, error) {
	restore := func() {}
	if fd := int(in.Fd()); term.IsTerminal(fd) {
		old, err := term.MakeRaw(fd)
		if err != nil {
			console.Close()
			return Canceled, fmt.Errorf("raw mode: %w", err)
		}
		restore = func() { _ = term.Restore(fd, old) }
	}
	lw := &lastByteWriter{w: out}
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(lw, console)
		ended <- err
	}()
	detached := make(chan struct{})
	go func() {
		forwardInput(in, console)
		close(detached)
	}()
	end, copying := Detached, true
	var err error
	select {
	case <-detached:
	case err = <-ended:
		end, copying = ConsoleClosed, false
	case <-ctx.Done():
		end = Canceled
	}
	_ = console.Close()
	if copying {
		<-ended // what the guest wrote last is on out
	}
	restore()
	if b, ok := lw.last(); ok && b != '\n' {
		fmt.Fprintln(out)
	}
	if end == ConsoleClosed && ctx.Err() != nil {
		end, err = Canceled, nil
	}
	return end, err
}

// lastByteWriter writes to w and remembers the last byte written.
type lastByteWriter struct {
	w    io.Writer
	mu   sync.Mutex
	b    byte
	some bool
}

func (lw *lastByteWriter) Write(p []byte) (int, error) {
	n, err := lw.w.Write(p)
	if n > 0 {
		lw.mu.Lock()
		lw.b, lw.some = p[n-1], true
		lw.mu.Unlock()
	}
	return n, err
}

// last returns the last byte written, if any.
func (lw *lastByteWriter) last() (byte, bool) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.b, lw.some
}

// forwardInput copies in to the console until Ctrl-] (what comes before
// it is sent), the end of in, or a write that fails.
func forwardInput(in io.Reader, console io.Writer) {
	buf := make([]byte, 1024)
	for {
		n, err := in.Read(buf)
		chunk := buf[:n]
		i := bytes.IndexByte(chunk, EscapeByte)
		if i >= 0 {
			chunk = chunk[:i]
		}
		if len(chunk) > 0 {
			if _, werr := console.Write(chunk); werr != nil {
				return
			}
		}
		if i >= 0 || err != nil {
			return
		}
	}
}
