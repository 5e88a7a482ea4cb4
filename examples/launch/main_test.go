package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// TestLaunchTiny runs the command as DESIGN.md specifies it on the smallest
// sample (under another name, so a person running the sample meanwhile is
// not disturbed): it must print phase=Scheduled, then phase=Running, and
// on SIGINT stop the VMI gracefully, print phase=Succeeded, exit 0 and
// leave no domain behind. Without libvirtd it skips, unless CI is set.
func TestLaunchTiny(t *testing.T) {
	if c, err := libvirt.NewConnect(launcher.DefaultURI); err != nil {
		hosttest.Missing(t, "libvirtd unreachable: %v", err)
	} else {
		_, _ = c.Close()
	}
	hosttest.LockLibvirt(t, false)
	testguest.Require(t, convert.DefaultImageStore)
	sample, err := os.ReadFile(filepath.Join("..", "vmis", "vmi-tiny.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	name := "launch-test-" + strconv.Itoa(os.Getpid())
	vmiFile := filepath.Join(t.TempDir(), "tiny.yaml")
	if err := os.WriteFile(vmiFile, []byte(strings.Replace(string(sample), "name: tiny", "name: "+name, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "launch")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	stateDir := "/var/lib/vmi2libvirt/e2e-launch-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { _ = os.RemoveAll(stateDir) })

	cmd := exec.Command(bin, "-emulate", "-state-dir", stateDir, vmiFile)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &strings.Builder{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	var got []string
	next := func(timeout time.Duration) string {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("launch ended early; printed %q; stderr:\n%s", got, stderr)
			}
			got = append(got, l)
			return l
		case <-time.After(timeout):
			t.Fatalf("launch printed nothing for %s; printed %q; stderr:\n%s", timeout, got, stderr)
		}
		return ""
	}
	if l := next(60 * time.Second); !strings.HasPrefix(l, "phase=Scheduled") {
		t.Fatalf("first line %q, want phase=Scheduled…", l)
	}
	for {
		if l := next(60 * time.Second); strings.HasPrefix(l, "phase=Running") && strings.Contains(l, "ready=True") {
			break
		} else if !strings.HasPrefix(l, "phase=Running") {
			t.Fatalf("line %q while starting, want phase=Running…", l)
		}
	}
	// Let the guest reach the point where it handles the power button.
	serial := filepath.Join(stateDir, "default_"+name, "serial0.log")
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if b, _ := os.ReadFile(serial); strings.Contains(string(b), "waiting for the ACPI power button") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the guest did not boot; printed %q", got)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	last := next(60 * time.Second)
	if !strings.HasPrefix(last, "phase=Succeeded") {
		t.Errorf("after Ctrl-C: %q, want phase=Succeeded…", last)
	}
	for l := range lines {
		got = append(got, l)
		t.Errorf("printed after the final phase: %q", l)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("launch exited with %v; stderr:\n%s", err, stderr)
	}
	c, err := libvirt.NewConnect(launcher.DefaultURI)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if d, err := c.LookupDomainByName("default_" + name); err == nil {
		_ = d.Free()
		t.Errorf("domain default_%s left behind", name)
	}
	if _, err := os.Stat(filepath.Join(stateDir, "default_"+name)); err == nil {
		t.Errorf("state folder left behind")
	}
	t.Logf("printed:\n%s", strings.Join(got, "\n"))
}

// TestDryRun: -dry-run prints the domain the launcher would define on this
// host — with the launcher's metadata, the host layout's paths and
// emulation — and writes nothing: no state folder, no domain.
func TestDryRun(t *testing.T) {
	if c, err := libvirt.NewConnect(launcher.DefaultURI); err != nil {
		hosttest.Missing(t, "libvirtd unreachable: %v", err)
	} else {
		_, _ = c.Close()
	}
	hosttest.LockLibvirt(t, false)
	testguest.Require(t, convert.DefaultImageStore)
	root := "/var/lib/vmi2libvirt/e2e-dry-run-" + strconv.Itoa(os.Getpid())
	t.Cleanup(func() { _ = os.RemoveAll(root) })
	stateDir := filepath.Join(root, "vmis")
	out, err := exec.Command("go", "run", ".", "-emulate", "-dry-run", "-owner", "dry-run-test", "-state-dir", stateDir, filepath.Join("..", "vmis", "vmi-tiny.yaml")).Output()
	if err != nil {
		t.Fatalf("launch -dry-run: %v", err)
	}
	d, err := domain.Unmarshal(out)
	if err != nil {
		t.Fatalf("not domain XML: %v\n%s", err, out)
	}
	if d.Type != "qemu" || d.Name != "default_tiny" || d.Metadata == nil || !strings.Contains(d.Metadata.XML, "<owner>dry-run-test</owner>") {
		t.Errorf("domain type %q, name %q, metadata %+v", d.Type, d.Name, d.Metadata)
	}
	if d.OS == nil || !strings.HasPrefix(d.OS.Kernel, convert.DefaultImageStore+"/") {
		t.Errorf("kernel %+v, want one from the image store", d.OS)
	}
	if _, err := os.Stat(stateDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("-dry-run made the state dir: %v", err)
	}
	c, err := libvirt.NewConnect(launcher.DefaultURI)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if dom, err := c.LookupDomainByName("default_tiny"); err == nil {
		raw, _ := dom.GetXMLDesc(0)
		_ = dom.Free()
		if strings.Contains(raw, "dry-run-test") {
			t.Error("-dry-run defined the domain")
		}
	}
}
