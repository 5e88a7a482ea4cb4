//go:build cgo

package main

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// statusJSON runs status -o json and decodes it strictly.
func statusJSON(t *testing.T, args ...string) v1.VirtualMachineInstanceStatus {
	t.Helper()
	r := expect(t, exitOK, "", append([]string{"status", "-o", "json"}, args...)...)
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	var st v1.VirtualMachineInstanceStatus
	if err := dec.Decode(&st); err != nil {
		t.Fatalf("status -o json is not a VirtualMachineInstanceStatus: %v\n%s", err, r.stdout)
	}
	return st
}

// domainState is virsh's word for the state of a domain; "" when it is not
// defined.
func domainState(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("virsh", "-c", launcher.DefaultURI, "domstate", name).CombinedOutput()
	if err != nil {
		if strings.Contains(string(out), "failed to get domain") {
			return ""
		}
		t.Fatalf("virsh domstate %s: %v\n%s", name, err, out)
	}
	return strings.TrimSpace(string(out))
}

// guestVMI readies the host for a test that runs the test guest as the
// VMI cli-WHAT-PID, owned by a launcher of the same name, in a state
// folder of its own: it returns the name, the folder and the flags that
// say so. The VMI is deleted and the folder removed when the test ends.
func guestVMI(t *testing.T, what string) (name, stateDir string, flags []string) {
	t.Helper()
	hosttest.Libvirt(t, launcher.DefaultURI)
	hosttest.LockLibvirt(t, false)
	testguest.Require(t, convert.DefaultImageStore)
	name = "cli-" + what + "-" + strconv.Itoa(os.Getpid())
	stateDir = "/var/lib/vmi2libvirt/e2e-" + name
	flags = []string{"--owner", name, "--state-dir", stateDir}
	t.Cleanup(func() {
		_ = exec.Command(binary, append([]string{"delete", name}, flags...)...).Run()
		_ = os.RemoveAll(stateDir)
	})
	return name, stateDir, flags
}

// waitSerial waits, up to 3 minutes, until the guest has written want on
// its serial log, the file at path.
func waitSerial(t *testing.T, path, want string) {
	t.Helper()
	for deadline := time.Now().Add(3 * time.Minute); ; time.Sleep(200 * time.Millisecond) {
		if b, _ := os.ReadFile(path); strings.Contains(string(b), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the guest wrote no %q in 3 minutes; serial log:\n%s", want, sample(t, path))
		}
	}
}

// TestRunStatusStopDelete runs the test guest through the command as a
// user would, under emulation, with a name, owner and state folder of its
// own: run --dry-run writes nothing; run starts it; status -o json says
// Running; another owner is refused; stop shuts it down gracefully
// (Succeeded); delete removes its domain and folder; then the name is
// unknown (exit 2). A libvirt that cannot be reached is exit 3.
func TestRunStatusStopDelete(t *testing.T) {
	name, stateDir, flags := guestVMI(t, "test")
	owner := name
	vmiFile := writeFile(t, t.TempDir(), "tiny.yaml", strings.Replace(sample(t, "../vmis/vmi-tiny.yaml"), "name: tiny", "name: "+name, 1))
	domainName := "default_" + name

	// A dry run prints the domain for this host and writes nothing.
	r := expect(t, exitOK, "", append([]string{"run", "--dry-run", "--emulate", vmiFile}, flags...)...)
	d, err := domain.Unmarshal([]byte(r.stdout))
	if err != nil {
		t.Fatalf("run --dry-run: not domain XML: %v\n%s", err, r.stdout)
	}
	if d.Type != "qemu" || d.Name != domainName || d.Metadata == nil || !strings.Contains(d.Metadata.XML, "<owner>"+owner+"</owner>") {
		t.Errorf("dry run: type %q, name %q, metadata %+v", d.Type, d.Name, d.Metadata)
	}
	if _, err := os.Stat(stateDir); !errors.Is(err, fs.ErrNotExist) || domainState(t, domainName) != "" {
		t.Fatalf("run --dry-run wrote something: state folder %v, domain %q", err, domainState(t, domainName))
	}

	// Run, from standard input: it returns with the guest running.
	r = expect(t, exitOK, sample(t, vmiFile), append([]string{"run", "--emulate", "-"}, flags...)...)
	if !strings.HasPrefix(r.stdout, "default/"+name+" phase=Running ") {
		t.Errorf("run printed %q", r.stdout)
	}
	st := statusJSON(t, append([]string{name}, flags...)...)
	if st.Phase != v1.Running || st.Machine == nil || !strings.HasPrefix(st.Machine.Type, "pc-q35") {
		t.Errorf("status: phase %s, machine %+v", st.Phase, st.Machine)
	}
	if s := domainState(t, domainName); s != "running" {
		t.Errorf("virsh says the domain is %q", s)
	}
	r = expect(t, exitOK, "", append([]string{"status", name}, flags...)...)
	if !strings.HasPrefix(r.stdout, "phase=Running ") {
		t.Errorf("status: %q", r.stdout)
	}
	r = expect(t, exitOK, "", append(append([]string{"__complete", "status"}, flags...), "")...)
	if !strings.HasPrefix(r.stdout, name+"\tRunning\n") {
		t.Errorf("completing status: %q", r.stdout)
	}
	// Running it again changes nothing.
	expect(t, exitOK, "", append([]string{"run", "--emulate", vmiFile}, flags...)...)
	if again := statusJSON(t, append([]string{name}, flags...)...); again.Phase != v1.Running || again.Interfaces[0].MAC != st.Interfaces[0].MAC {
		t.Errorf("after a second run: %+v", again)
	}

	// Another owner may not touch it; a libvirt that is not there is exit 3.
	for _, verb := range []string{"status", "stop", "delete"} {
		r = expect(t, exitHost, "", verb, name, "--owner", "someone-else", "--state-dir", stateDir)
		if !strings.Contains(r.stderr, `it belongs to the launcher "`+owner+`"`) {
			t.Errorf("%s by another owner: %s", verb, r.stderr)
		}
	}
	r = expect(t, exitHost, "", append([]string{"status", name, "--uri", "qemu+unix:///system?socket=/nonexistent/libvirt-sock"}, flags...)...)
	if !strings.Contains(r.stderr, "error: launcher: connect to qemu+unix:///system?socket=/nonexistent/libvirt-sock") {
		t.Errorf("unreachable libvirt: %s", r.stderr)
	}
	if s := domainState(t, domainName); s != "running" {
		t.Fatalf("after the refused calls the domain is %q", s)
	}

	// Stop once the guest handles the power button: it powers off.
	waitSerial(t, filepath.Join(stateDir, domainName, "serial0.log"), "waiting for the ACPI power button")
	r = expect(t, exitOK, "", append([]string{"stop", name}, flags...)...)
	if !strings.HasPrefix(r.stdout, "default/"+name+" phase=Succeeded ") {
		t.Errorf("stop printed %q", r.stdout)
	}
	if st := statusJSON(t, append([]string{name}, flags...)...); st.Phase != v1.Succeeded {
		t.Errorf("after stop: phase %s", st.Phase)
	}

	r = expect(t, exitOK, "", append([]string{"delete", name}, flags...)...)
	if r.stdout != "default/"+name+" deleted\n" {
		t.Errorf("delete printed %q", r.stdout)
	}
	if s := domainState(t, domainName); s != "" {
		t.Errorf("after delete the domain is %q", s)
	}
	if _, err := os.Stat(filepath.Join(stateDir, domainName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("after delete the state folder is there: %v", err)
	}
	for _, verb := range []string{"status", "stop", "delete"} {
		r = expect(t, exitUsage, "", append([]string{verb, name}, flags...)...)
		if !strings.Contains(r.stderr, "error: no VMI default/"+name+` on this host for owner "`+owner+`"`) {
			t.Errorf("%s after delete: %s", verb, r.stderr)
		}
	}
}

// TestRunInvalid: a VMI the launcher refuses exits 1 with each problem at
// its line and path in the file (a VirtualMachine's paths), and nothing is
// defined.
func TestRunInvalid(t *testing.T) {
	hosttest.Libvirt(t, launcher.DefaultURI)
	hosttest.LockLibvirt(t, false)
	id := strconv.Itoa(os.Getpid())
	stateDir := "/var/lib/vmi2libvirt/e2e-cli-invalid-" + id
	t.Cleanup(func() { _ = os.RemoveAll(stateDir) })
	vm := `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: cli-invalid-` + id + `
spec:
  runStrategy: Always
  template:
    spec:
      domain:
        memory: {guest: 64Mi}
        devices:
          interfaces:
          - {name: blue, bridge: {}}
      networks:
      - name: blue
        multus: {networkName: blue-net}
`
	file := writeFile(t, t.TempDir(), "vm.yaml", vm)
	r := expect(t, exitInvalid, "", "run", "--emulate", "--owner", "cli-invalid", "--state-dir", stateDir, file)
	if !strings.Contains(r.stderr, "error: "+file+":16: spec.template.spec.networks[0].multus.networkName: Invalid value: \"blue-net\"") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	if s := domainState(t, "default_cli-invalid-"+id); s != "" {
		t.Errorf("the refused VMI's domain is %q", s)
	}
	r = expect(t, exitInvalid, "", "run", "--emulate", "--owner", "cli-invalid", "--state-dir", stateDir, filepath.Join(golden, "basic-error-wrong-kind", "vmi.yaml"))
	if !strings.Contains(r.stderr, `vmi.yaml:4: kind: Unsupported value: "Pod"`) {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

// TestStopDeadline: a guest that ignores the power button is destroyed when
// its grace period ends (Failed, as in KubeVirt); a stop interrupted by
// Ctrl-C exits 3 and leaves the guest running with its shutdown pending,
// and the next stop finishes it.
func TestStopDeadline(t *testing.T) {
	name, stateDir, flags := guestVMI(t, "deadline")
	tiny := sample(t, "../vmis/vmi-tiny.yaml")
	for old, new := range map[string]string{
		"name: tiny":                        "name: " + name,
		"testguest.action=acpi":             "testguest.action=ignore",
		"terminationGracePeriodSeconds: 30": "terminationGracePeriodSeconds: 8",
	} {
		if !strings.Contains(tiny, old) {
			t.Fatalf("vmi-tiny.yaml lacks %q", old)
		}
		tiny = strings.Replace(tiny, old, new, 1)
	}
	expect(t, exitOK, tiny, append([]string{"run", "--emulate", "-"}, flags...)...)
	waitSerial(t, filepath.Join(stateDir, "default_"+name, "serial0.log"), "testguest: ignoring ACPI")

	stop := exec.Command(binary, append([]string{"stop", name}, flags...)...)
	var stderr strings.Builder
	stop.Stderr = &stderr
	if err := stop.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := stop.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := stop.Wait(); stop.ProcessState.ExitCode() != exitHost || !strings.Contains(stderr.String(), "error: interrupted: context canceled") {
		t.Errorf("interrupted stop: %v\n%s", err, stderr.String())
	}
	if st := statusJSON(t, append([]string{name}, flags...)...); st.Phase != v1.Running {
		t.Errorf("after the interrupted stop: phase %s, want Running", st.Phase)
	}
	r := expect(t, exitOK, "", append([]string{"stop", name}, flags...)...)
	if !strings.HasPrefix(r.stdout, "default/"+name+" phase=Failed ") {
		t.Errorf("stop of a guest that ignores the power button printed %q", r.stdout)
	}
}

// TestHostCommand: host prints the facts the launcher plans with, as text
// and as convert.HostFacts in JSON.
func TestHostCommand(t *testing.T) {
	hosttest.Libvirt(t, launcher.DefaultURI)
	r := expect(t, exitOK, "", "host", "--emulate", "-o", "json")
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	var facts convert.HostFacts
	if err := dec.Decode(&facts); err != nil {
		t.Fatalf("host -o json is not a convert.HostFacts: %v\n%s", err, r.stdout)
	}
	if facts.DomainType != "qemu" || facts.Libvirt == 0 || len(facts.MachineTypes) == 0 || len(facts.CPUModels) == 0 {
		t.Errorf("facts: %+v", facts)
	}
	text := expect(t, exitOK, "", "host", "--emulate").stdout
	for _, want := range []string{"libvirt:", "domain:        x86_64 qemu " + facts.Machine, "cpu models:    " + strings.Join(facts.CPUModels, " ")} {
		if !strings.Contains(text, want) {
			t.Errorf("host does not print %q:\n%s", want, text)
		}
	}
}
