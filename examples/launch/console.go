package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/term"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/launcher"
)

// escapeByte is Ctrl-], the byte that detaches the terminal from the
// console, as in virsh console and virtctl console.
const escapeByte = 0x1d

// attachConsole connects the terminal to the VMI's serial console until
// the user types Ctrl-], the console ends (the guest's QEMU exited), or
// ctx ends. While attached, stdin goes to the guest byte for byte (in raw
// mode when it is a terminal: Ctrl-C is the guest's) and the guest's
// output goes to stdout; status lines wait (see statusPrinter). The VMI
// keeps running when the terminal detaches.
func attachConsole(ctx context.Context, l *launcher.Launcher, vmi *v1.VirtualMachineInstance, status *statusPrinter) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, err := l.Console(ctx, vmi, launcher.ConsoleOptions{})
	if err != nil {
		return err
	}
	defer c.Close()

	key := vmi.Namespace + "/" + vmi.Name
	fmt.Fprintf(os.Stderr, "launch: connected to the console of %s; Ctrl-] detaches\n", key)
	status.hold()
	defer status.release()
	restore := func() {}
	if fd := int(os.Stdin.Fd()); term.IsTerminal(fd) {
		old, err := term.MakeRaw(fd)
		if err != nil {
			return fmt.Errorf("raw mode: %w", err)
		}
		restore = func() { _ = term.Restore(fd, old) }
	}

	out := &lastByteWriter{w: os.Stdout}
	ended := make(chan error, 1)
	go func() {
		_, err := io.Copy(out, c)
		ended <- err
	}()
	detached := make(chan struct{})
	go func() {
		forwardInput(os.Stdin, c)
		close(detached)
	}()
	var msg string
	copying := true
	select {
	case <-detached:
		msg = "detached from the console of " + key + "; it keeps running (Ctrl-C stops it)"
	case err := <-ended:
		copying = false
		if err == nil {
			msg = "the console of " + key + " closed: its QEMU exited"
		} else if ctx.Err() == nil {
			msg = fmt.Sprintf("the console of %s failed: %v", key, err)
		}
	case <-ctx.Done():
	}
	_ = c.Close()
	if copying {
		<-ended // what the guest wrote last is on stdout
	}
	restore()
	// Status lines start on a line of their own.
	if b, ok := out.last(); ok && b != '\n' {
		fmt.Println()
	}
	if msg != "" {
		fmt.Fprintln(os.Stderr, "launch: "+msg)
	}
	return nil
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
		i := bytes.IndexByte(chunk, escapeByte)
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
