package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// copyGolden copies cases of the project's golden folder into dir.
func copyGolden(t *testing.T, dir string, cases ...string) {
	t.Helper()
	for _, c := range cases {
		files, err := os.ReadDir(filepath.Join(golden, c))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			writeFile(t, filepath.Join(dir, c), f.Name(), sample(t, filepath.Join(golden, c, f.Name())))
		}
	}
}

// TestGoldenCheckFresh: the project's own golden folder is fresh, every
// case counted; a single case folder can be checked alone.
func TestGoldenCheckFresh(t *testing.T) {
	cases, err := filepath.Glob(filepath.Join(golden, "*", "vmi.yaml"))
	if err != nil || len(cases) < 100 {
		t.Fatalf("%d golden cases: %v", len(cases), err)
	}
	r := expect(t, exitOK, "", "golden", "check", golden)
	want := "golden check: " + strconv.Itoa(len(cases)) + " fixtures: " + strconv.Itoa(len(cases)) + " fresh\n"
	if r.stdout != want || r.stderr != "" {
		t.Errorf("stdout %q, want %q; stderr:\n%s", r.stdout, want, r.stderr)
	}
	r = expect(t, exitOK, "", "golden", "check", filepath.Join(golden, "basic-minimal"))
	if r.stdout != "golden check: 1 fixture: 1 fresh\n" {
		t.Errorf("one case: %q", r.stdout)
	}
}

// TestGoldenWorkflow is the workflow of an operator's CI: fixtures are
// written with update, a change of a VMI makes check fail with a field-by-
// field diff naming the field, update rewrites exactly that fixture, and
// check passes again.
func TestGoldenWorkflow(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "domains")
	copyGolden(t, dir, "basic-minimal", "basic-error-wrong-kind", "net-host-bridge")
	// A new fixture: only its VMI.
	vm := sample(t, filepath.Join(golden, "oracle-vm-firmware-uuid", "vmi.yaml"))
	writeFile(t, filepath.Join(dir, "web"), "vmi.yaml", vm)

	r := expect(t, exitInvalid, "", "golden", "check", dir)
	if !strings.Contains(r.stdout, "STALE "+filepath.Join(dir, "web")+": neither domain.xml nor error.txt") ||
		!strings.Contains(r.stderr, "error: "+filepath.Join(dir, "web")+": stale fixture: neither domain.xml nor error.txt") {
		t.Errorf("new fixture: stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	r = expect(t, exitOK, "", "golden", "update", dir)
	if r.stdout != "updated "+filepath.Join(dir, "web", "domain.xml")+"\ngolden update: 4 fixtures: 3 fresh, 1 updated\n" {
		t.Errorf("update stdout:\n%s", r.stdout)
	}
	if got := sample(t, filepath.Join(dir, "web", "domain.xml")); got != sample(t, filepath.Join(golden, "oracle-vm-firmware-uuid", "domain.xml")) {
		t.Errorf("the written domain.xml is not the golden case's:\n%s", got)
	}
	expect(t, exitOK, "", "golden", "check", dir)

	// A change of the VMI: check fails naming the field, update fixes it.
	vmi := filepath.Join(dir, "basic-minimal", "vmi.yaml")
	writeFile(t, filepath.Dir(vmi), "vmi.yaml", strings.Replace(sample(t, vmi), "memory: 128Mi", "memory: 256Mi", 1))
	r = expect(t, exitInvalid, "", "golden", "check", dir)
	for _, want := range []string{
		"STALE " + filepath.Join(dir, "basic-minimal") + ": domain.xml differs from the domain the VMI converts to now\n",
		"field by field (-domain.xml +now):",
		"Memory: &libvirtxml.DomainMemory{",
		"Value:    134217728,",
		"Value:    268435456,",
		"golden check: 4 fixtures: 3 fresh, 1 stale\n",
	} {
		if !strings.Contains(strings.ReplaceAll(r.stdout, "\u00a0", " "), want) {
			t.Errorf("check stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "error: "+filepath.Join(dir, "basic-minimal")+": stale fixture: domain.xml differs from the domain the VMI converts to now (vmi2libvirt golden update "+filepath.Join(dir, "basic-minimal")+" rewrites it)") {
		t.Errorf("check stderr:\n%s", r.stderr)
	}
	r = expect(t, exitOK, "", "golden", "update", dir)
	if !strings.HasPrefix(r.stdout, "updated "+filepath.Join(dir, "basic-minimal", "domain.xml")+"\n") {
		t.Errorf("update stdout:\n%s", r.stdout)
	}
	if got := sample(t, filepath.Join(dir, "basic-minimal", "domain.xml")); !strings.Contains(got, `<memory unit="b">268435456</memory>`) {
		t.Errorf("domain.xml not rewritten:\n%s", got)
	}
	expect(t, exitOK, "", "golden", "check", dir)

	// A broken case fails check and update, and update leaves it alone.
	writeFile(t, filepath.Join(dir, "basic-minimal"), "error.txt", "x\n")
	for _, verb := range []string{"check", "update"} {
		r = expect(t, exitInvalid, "", "golden", verb, dir)
		if !strings.Contains(r.stderr, "error: "+filepath.Join(dir, "basic-minimal")+": broken fixture: both domain.xml and error.txt") {
			t.Errorf("%s stderr:\n%s", verb, r.stderr)
		}
	}
}

// TestGoldenUsage: a folder without fixtures or not there, a missing DIR,
// an unknown subcommand are usage errors.
func TestGoldenUsage(t *testing.T) {
	for _, args := range [][]string{
		{"golden", "check", t.TempDir()},
		{"golden", "check", "nope"},
		{"golden", "update"},
		{"golden", "check", "a", "b"},
		{"golden", "chek", golden},
	} {
		expect(t, exitUsage, "", args...)
	}
}
