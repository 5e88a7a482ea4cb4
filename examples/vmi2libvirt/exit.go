package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

// Exit codes of vmi2libvirt. When a command meets several failures, it
// exits with the largest code among them.
const (
	// exitOK: done; the inputs are valid, the fixtures fresh, the domains
	// equal.
	exitOK = 0
	// exitInvalid: an input is not what it must be: a VMI that cannot
	// become a domain, a stale or broken golden fixture, two domains that
	// differ (diff).
	exitInvalid = 1
	// exitUsage: the command line is wrong: an unknown command or flag, a
	// bad flag value, a wrong number of arguments, a file, folder or VMI
	// named that is not there.
	exitUsage = 2
	// exitHost: the host failed: a file that cannot be read or written,
	// libvirt unreachable or refusing, something the VMI needs missing on
	// the host, a domain another launcher owns.
	exitHost = 3
)

// exitError ends a command with its code. Its err, when set, is printed
// as one error line; nil when the command printed its errors itself. help
// adds where to find the command's usage.
type exitError struct {
	code int
	err  error
	help bool
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageErrorf is an error of the command line.
func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...), help: true}
}

// codeOf is the exit code for err: exitInvalid for input the pipeline
// refuses, exitUsage for a file that is not there, exitHost for anything
// else.
func codeOf(err error) int {
	var ee *exitError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, pipeline.ErrInvalid):
		return exitInvalid
	case errors.Is(err, fs.ErrNotExist):
		return exitUsage
	}
	return exitHost
}

// errorLine prints one error line on w, in the one format of every error
// vmi2libvirt prints: "error: WHERE: WHAT" (WHERE may be empty).
func errorLine(w io.Writer, where, what string) {
	if where != "" {
		where += ": "
	}
	fmt.Fprintf(w, "error: %s%s\n", where, oneLine(what))
}

// failures prints the failures of a command that goes on after one (a
// file that does not convert does not stop the others) and remembers the
// exit code they call for.
type failures struct {
	w    io.Writer
	code int
}

// add prints err as an error line about where and keeps its code.
func (f *failures) add(where string, err error) {
	errorLine(f.w, where, err.Error())
	f.code = max(f.code, codeOf(err))
}

// problems prints each problem of a document and keeps code.
func (f *failures) problems(ps []problem, code int) {
	for _, p := range ps {
		errorLine(f.w, "", p.String())
	}
	f.code = max(f.code, code)
}

// err is nil when nothing failed, else the exit code for what did
// (already printed).
func (f *failures) err() error {
	if f.code == exitOK {
		return nil
	}
	return &exitError{code: f.code}
}
