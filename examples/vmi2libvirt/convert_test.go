package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// golden is the project's own golden folder: each case's domain.xml was
// checked by hand, so the command's output is compared with it.
const golden = "../../convert/testdata"

// goldenCase returns a case's VMI and expected domain XML.
func goldenCase(t *testing.T, name string) (vmi, xml string) {
	t.Helper()
	return sample(t, filepath.Join(golden, name, "vmi.yaml")), sample(t, filepath.Join(golden, name, "domain.xml"))
}

// TestConvertOne: one VMI, named with -f, as an argument or on standard
// input, is printed as the domain the golden case holds, and nothing else.
func TestConvertOne(t *testing.T) {
	vmi, want := goldenCase(t, "basic-minimal")
	file := filepath.Join(golden, "basic-minimal", "vmi.yaml")
	for _, c := range []struct {
		name, stdin string
		args        []string
	}{
		{"-f FILE", "", []string{"convert", "-f", file}},
		{"FILE", "", []string{"convert", file}},
		{"-f -", vmi, []string{"convert", "-f", "-"}},
		{"-", vmi, []string{"convert", "-"}},
		{"--- first", "---\n" + vmi, []string{"convert", "-"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := expect(t, exitOK, c.stdin, c.args...)
			if r.stdout != want || r.stderr != "" {
				t.Errorf("stdout is not basic-minimal's domain.xml, or stderr is not empty:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			}
		})
	}
}

// TestConvertLayouts: --layout host, and a fixture's options file, give the
// domains of the golden cases converted with them; flags may follow the
// file name.
func TestConvertLayouts(t *testing.T) {
	_, want := goldenCase(t, "basic-host-layout")
	file := filepath.Join(golden, "basic-host-layout", "vmi.yaml")
	r := expect(t, exitOK, "", "convert", file, "--options", filepath.Join(golden, "basic-host-layout", "options.yaml"))
	if r.stdout != want {
		t.Errorf("--options: not basic-host-layout's domain.xml:\n%s", r.stdout)
	}
	_, want = goldenCase(t, "net-host-bridge")
	r = expect(t, exitOK, "", "convert", "-f", filepath.Join(golden, "net-host-bridge", "vmi.yaml"), "--options", filepath.Join(golden, "net-host-bridge", "options.yaml"))
	if r.stdout != want {
		t.Errorf("--options: not net-host-bridge's domain.xml:\n%s", r.stdout)
	}
	r = expect(t, exitOK, "", "convert", file, "--layout", "host", "--state-dir", "/srv/vmis")
	if !strings.Contains(r.stdout, "<source file=\"/srv/vmis/demo_minimal/disks/containerdisk.qcow2\">") || strings.Contains(r.stdout, "/var/run/kubevirt") {
		t.Errorf("--layout host --state-dir /srv/vmis: paths not in /srv/vmis:\n%s", r.stdout)
	}
	r = expect(t, exitOK, "", "convert", file)
	if !strings.Contains(r.stdout, "/var/run/kubevirt") {
		t.Errorf("default layout: not KubeVirt's paths:\n%s", r.stdout)
	}
}

// multiDocument is three golden VMIs in one stream — a VMI, a
// VirtualMachine and a VMI — with a comment-only document between them,
// and the domain each must give, by file name.
func multiDocument(t *testing.T) (string, map[string]string) {
	var stream []string
	want := map[string]string{}
	for _, c := range []struct{ name, domain string }{
		{"basic-minimal", "default_minimal.xml"},
		{"oracle-vm-firmware-uuid", "team-a_fedora-multi.xml"},
		{"compute-clock-utc-offset", ""},
	} {
		vmi, xml := goldenCase(t, c.name)
		stream = append(stream, vmi)
		if c.domain != "" {
			want[c.domain] = xml
		}
	}
	// The third case's domain name, from its XML.
	_, xml := goldenCase(t, "compute-clock-utc-offset")
	name := between(xml, "<name>", "</name>")
	want[name+".xml"] = xml
	return strings.Join(stream[:2], "---\n") + "---\n# nothing here\n--- # the last one\n" + stream[2], want
}

func between(s, from, to string) string {
	_, s, _ = strings.Cut(s, from)
	s, _, _ = strings.Cut(s, to)
	return s
}

// checkOutDir requires dir to hold exactly the files of want.
func checkOutDir(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(want) {
		t.Errorf("%s holds %d files, want %d", dir, len(entries), len(want))
	}
	for name, xml := range want {
		if got := sample(t, filepath.Join(dir, name)); got != xml {
			t.Errorf("%s/%s is not its golden domain:\n%s", dir, name, got)
		}
	}
}

// TestConvertMultiDocument: a stream of several VMIs is refused on standard
// output (usage), and written one file per domain with -o.
func TestConvertMultiDocument(t *testing.T) {
	stream, want := multiDocument(t)
	r := expect(t, exitUsage, stream, "convert", "-f", "-")
	if r.stdout != "" || !strings.Contains(r.stderr, "error: 3 documents in the input, and standard output takes one domain: write them to a folder with -o DIR") {
		t.Errorf("stdout %q, stderr:\n%s", r.stdout, r.stderr)
	}
	dir := filepath.Join(t.TempDir(), "out")
	file := writeFile(t, t.TempDir(), "three.yaml", stream)
	r = expect(t, exitOK, "", "convert", "-f", file, "-o", dir)
	checkOutDir(t, dir, want)
	if lines := strings.Fields(r.stdout); len(lines) != 3 || lines[0] != filepath.Join(dir, "default_minimal.xml") {
		t.Errorf("stdout lists %q, want the three files written, in input order", lines)
	}
}

// TestConvertFolder: a folder contributes its .yaml, .yml and .json files
// (not others, not its sub-folders'); with a file beside it, all go to -o.
func TestConvertFolder(t *testing.T) {
	in := t.TempDir()
	vmi, xml := goldenCase(t, "basic-minimal")
	writeFile(t, in, "a.yaml", vmi)
	vm, vmXML := goldenCase(t, "oracle-vm-firmware-uuid")
	writeFile(t, in, "b.yml", vm)
	writeFile(t, in, "notes.txt", "not a VMI")
	writeFile(t, in, "sub/c.yaml", "not read")
	jsonVMI := `{"apiVersion": "kubevirt.io/v1", "kind": "VirtualMachineInstance",
 "metadata": {"name": "from-json", "namespace": "js"},
 "spec": {"domain": {"memory": {"guest": "64Mi"}, "devices": {}}}}`
	writeFile(t, in, "c.json", jsonVMI)
	jsonXML := expect(t, exitOK, jsonVMI, "convert", "-").stdout
	if !strings.Contains(jsonXML, "<name>js_from-json</name>") {
		t.Fatalf("the JSON VMI's domain:\n%s", jsonXML)
	}
	other, otherXML := goldenCase(t, "compute-clock-utc-offset")
	otherFile := writeFile(t, t.TempDir(), "other.yaml", other)

	out := filepath.Join(t.TempDir(), "out")
	expect(t, exitOK, "", "convert", "-f", in, otherFile, "-o", out)
	checkOutDir(t, out, map[string]string{
		"default_minimal.xml":                           xml,
		"team-a_fedora-multi.xml":                       vmXML,
		"js_from-json.xml":                              jsonXML,
		between(otherXML, "<name>", "</name>") + ".xml": otherXML,
	})
	r := expect(t, exitUsage, "", "convert", "-f", in)
	if !strings.Contains(r.stderr, "3 documents in 3 files") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

// TestConvertInvalid: every problem of every document is reported, with
// file, line, document and field path, the valid documents are still
// written, and the exit status is 1.
func TestConvertInvalid(t *testing.T) {
	vmi, xml := goldenCase(t, "basic-minimal")
	bad := `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: bad
spec:
  domain:
    memory: {guest: 64Mi}
    devices:
      disks:
      - name: root
        disk: {bus: floppy}
`
	typo := "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata: {name: typo}\nspec:\n  domian: {}\n"
	file := writeFile(t, t.TempDir(), "mixed.yaml", bad+"---\n"+vmi+"---\n"+typo)
	out := filepath.Join(t.TempDir(), "out")
	r := expect(t, exitInvalid, "", "convert", "-f", file, "-o", out)
	checkOutDir(t, out, map[string]string{"default_minimal.xml": xml})
	typoLine := strings.Count(bad+"---\n"+vmi+"---\n", "\n") + 5
	for _, want := range []string{
		"error: " + file + ":11 (document 1 of 3): spec.domain.devices.disks[0].disk.bus: Unsupported value: \"floppy\"",
		"error: " + file + ":10 (document 1 of 3): spec.domain.devices.disks[0].name: Invalid value: \"root\": no volume of this name in spec.volumes",
		"error: " + file + ":" + strconv.Itoa(typoLine) + " (document 3 of 3): spec.domian: unknown field",
	} {
		if !strings.Contains(r.stderr, want+"") {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if n := strings.Count(r.stderr, "error: "); n != 3 {
		t.Errorf("%d error lines, want 3:\n%s", n, r.stderr)
	}
	// Alone on standard output: nothing printed, exit 1.
	r = expect(t, exitInvalid, bad, "convert", "-")
	if r.stdout != "" || !strings.Contains(r.stderr, "error: <stdin>:11: spec.domain.devices.disks[0].disk.bus") {
		t.Errorf("stdout %q, stderr:\n%s", r.stdout, r.stderr)
	}
	// Two documents for one domain name.
	r = expect(t, exitInvalid, "", "convert", "-f", writeFile(t, t.TempDir(), "twice.yaml", vmi+"---\n"+vmi), "-o", filepath.Join(t.TempDir(), "o"))
	if !strings.Contains(r.stderr, "(document 2 of 2): the same namespace and name as ") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}

// TestConvertUsage: what the command line gets wrong exits 2 and writes
// nothing; a folder that cannot be written exits 3.
func TestConvertUsage(t *testing.T) {
	file := filepath.Join(golden, "basic-minimal", "vmi.yaml")
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"convert"}, "no input"},
		{[]string{"convert", "-f", "nope.yaml"}, "nope.yaml: no such file or directory"},
		{[]string{"convert", "-f", t.TempDir()}, "no .yaml, .yml, .json file in the folder"},
		{[]string{"convert", "-", "-"}, "standard input (-) named twice"},
		{[]string{"convert", file, "-o", "json"}, `-o takes a folder to write domain XML into, and "json" is an output format`},
		{[]string{"convert", file, "-o", "jsonpath={.x}"}, "is an output format"},
		{[]string{"convert", file, "--layout", "pod"}, `--layout "pod": want kubevirt or host`},
		{[]string{"convert", file, "--state-dir", "/x"}, "--state-dir places VMIs on a host: it needs --layout host"},
		{[]string{"convert", file, "--options", filepath.Join(golden, "basic-host-layout", "options.yaml"), "--layout", "host"}, "[layout options] were all set"},
		{[]string{"convert", file, "--options", writeFile(t, dir, "bad.yaml", "layout: pod\n")}, `--options ` + dir + `/bad.yaml: layout "pod"`},
		{[]string{"convert", file, "--frobnicate"}, "unknown flag: --frobnicate"},
		{[]string{"convrt", file}, `unknown command "convrt" for "vmi2libvirt"`},
	} {
		r := expect(t, exitUsage, "", c.args...)
		if !strings.Contains(r.stderr, c.want) || r.stdout != "" {
			t.Errorf("%q: stdout %q; stderr lacks %q:\n%s", c.args, r.stdout, c.want, r.stderr)
		}
	}
	if _, err := os.Stat("json"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("-o json made a folder json: %v", err)
	}
	r := expect(t, exitHost, "", "convert", file, "-o", "/dev/null/out")
	if !strings.Contains(r.stderr, "error: mkdir /dev/null: not a directory") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
}
