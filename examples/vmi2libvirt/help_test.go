package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestHelp: every command has --help, exiting 0, with its usage and, for
// each one that does something, an example.
func TestHelp(t *testing.T) {
	var walk func(c *cobra.Command)
	checked := 0
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" {
			return
		}
		args := append(strings.Fields(c.CommandPath())[1:], "--help")
		r := expect(t, exitOK, "", args...)
		if !strings.Contains(r.stdout, "Usage:\n  "+c.CommandPath()) {
			t.Errorf("%s --help: no usage:\n%s", c.CommandPath(), r.stdout)
		}
		if c.Runnable() && !strings.Contains(r.stdout, "\nExamples:\n  ") {
			t.Errorf("%s --help: no example:\n%s", c.CommandPath(), r.stdout)
		}
		checked++
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
	// vmi2libvirt, convert, validate, golden with check and update, diff,
	// and with cgo run, status, stop, delete. (The completion commands are
	// added by cobra when it runs.)
	if want := 7 + len(libvirtCommands()); checked != want {
		t.Errorf("checked the help of %d commands, want %d", checked, want)
	}
}

// TestUsageErrors: a wrong command line exits 2 with one error line and
// where to find help.
func TestUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"frobnicate"}, `error: unknown command "frobnicate" for "vmi2libvirt"`},
		{[]string{"convrt"}, `error: unknown command "convrt" for "vmi2libvirt" Did you mean this? convert` + "\nRun 'vmi2libvirt --help' for usage."},
		{[]string{"validate", "--nope"}, "error: unknown flag: --nope\nRun 'vmi2libvirt validate --help' for usage."},
		{[]string{"diff", "a"}, "error: vmi2libvirt diff takes A B, got 1 argument(s)\nRun 'vmi2libvirt diff --help' for usage."},
		{[]string{"golden", "check", "a", "b"}, "error: vmi2libvirt golden check takes DIR, got 2 argument(s)"},
		{[]string{"golden", "bogus"}, `error: unknown command "bogus" for "vmi2libvirt golden"` + "\nRun 'vmi2libvirt golden --help' for usage."},
	} {
		r := expect(t, exitUsage, "", c.args...)
		if !strings.Contains(r.stderr, c.want) || r.stdout != "" {
			t.Errorf("%q: stdout %q, stderr lacks %q:\n%s", c.args, r.stdout, c.want, r.stderr)
		}
	}
}

// TestCompletion: cobra's completion scripts come with the command, and
// complete the subcommands and --layout's values.
func TestCompletion(t *testing.T) {
	r := expect(t, exitOK, "", "completion", "bash")
	if !strings.Contains(r.stdout, "__start_vmi2libvirt") {
		t.Errorf("completion bash: not a bash completion script:\n%.300s", r.stdout)
	}
	r = expect(t, exitOK, "", "__complete", "conv")
	if !strings.HasPrefix(r.stdout, "convert\t") {
		t.Errorf("completing conv: %q", r.stdout)
	}
	r = expect(t, exitOK, "", "__complete", "convert", "--layout", "")
	if !strings.HasPrefix(r.stdout, "kubevirt\nhost\n") {
		t.Errorf("completing --layout: %q", r.stdout)
	}
}

// TestWithoutCgo: built with CGO_ENABLED=0 (no libvirt), the command has
// the pure subcommands, and says why the others are missing.
func TestWithoutCgo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command a second time")
	}
	bin := filepath.Join(t.TempDir(), "vmi2libvirt")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "convert", filepath.Join(golden, "basic-minimal", "vmi.yaml")).Output()
	if err != nil || string(out) != sample(t, filepath.Join(golden, "basic-minimal", "domain.xml")) {
		t.Errorf("convert without cgo: %v\n%s", err, out)
	}
	for _, name := range []string{"run", "status", "stop", "delete"} {
		cmd := exec.Command(bin, name, "x")
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != exitUsage || !strings.Contains(string(out), "this vmi2libvirt was built without cgo, which "+name+" needs") {
			t.Errorf("%s without cgo: %v\n%s", name, err, out)
		}
	}
}

// TestLibvirtCommandNames: libvirtCommandNames are the names of
// libvirtCommands in a build with cgo, and a build without cgo explains
// each of them rather than calling it unknown.
func TestLibvirtCommandNames(t *testing.T) {
	cmds := libvirtCommands()
	if len(cmds) == 0 { // built without cgo
		for _, name := range libvirtCommandNames {
			if withoutCgo(name) == "" {
				t.Errorf("%s: no explanation without cgo", name)
			}
		}
		return
	}
	var names []string
	for _, c := range cmds {
		names = append(names, c.Name())
	}
	if !slices.Equal(names, libvirtCommandNames) {
		t.Errorf("libvirtCommands are %v, libvirtCommandNames %v", names, libvirtCommandNames)
	}
}
