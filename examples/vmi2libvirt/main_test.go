package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// binary is the command, built once by TestMain as a user builds it.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vmi2libvirt-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "vmi2libvirt")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// result is what one run of the command gave.
type result struct {
	stdout, stderr string
	code           int
}

// run runs the built command with args and stdin (none when empty), from
// this folder, and checks what every run must hold: a failure prints at
// least one error line on stderr, and every line of stderr is an error line,
// a pointer to --help, or a log line of the launcher.
func run(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("vmi2libvirt %s: %v", strings.Join(args, " "), err)
	}
	errorLines := 0
	for _, line := range strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n") {
		switch {
		case line == "":
		case strings.HasPrefix(line, "error: "):
			errorLines++
		case strings.HasPrefix(line, "Run 'vmi2libvirt") && strings.HasSuffix(line, " --help' for usage."):
		case strings.HasPrefix(line, "t=") && strings.Contains(line, " level="): // the launcher's log
		case args[0] == "__complete" && strings.HasPrefix(line, "Completion ended with directive: "):
		default:
			t.Errorf("vmi2libvirt %s: stderr line not in the error format: %q", strings.Join(args, " "), line)
		}
	}
	if r.code != 0 && errorLines == 0 {
		t.Errorf("vmi2libvirt %s: exit status %d without an error line; stderr:\n%s", strings.Join(args, " "), r.code, r.stderr)
	}
	return r
}

// expect runs the command and requires its exit status to be code.
func expect(t *testing.T, code int, stdin string, args ...string) result {
	t.Helper()
	r := run(t, stdin, args...)
	if r.code != code {
		t.Fatalf("vmi2libvirt %s: exit status %d, want %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, code, r.stdout, r.stderr)
	}
	return r
}

// sample reads a file of the repository relative to this folder.
func sample(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// writeFile writes content to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
