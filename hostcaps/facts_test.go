package hostcaps_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/hostcaps"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/golden"
)

// update rewrites testdata/*/facts.json: go test ./hostcaps -update.
var update = flag.Bool("update", false, "rewrite testdata/*/facts.json and labels.json (refused when CI is set)")

// inputs are a case's inputs.yaml: what the launcher learns beside the
// documents.
type inputs struct {
	Libvirt  uint32          `json:"libvirt"`
	QEMU     uint32          `json:"qemu"`
	Refused  []convert.Lack  `json:"refused"`
	Programs map[string]bool `json:"programs"`
}

// readCase reads the documents of a testdata case folder: capabilities.xml,
// domcapabilities.xml, cpufeatures.xml (when there), firmware/*.json and
// inputs.yaml.
func readCase(t *testing.T, dir string) hostcaps.Documents {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var in inputs
	if err := yaml.UnmarshalStrict(read("inputs.yaml"), &in); err != nil {
		t.Fatal(err)
	}
	docs := hostcaps.Documents{Libvirt: in.Libvirt, QEMU: in.QEMU, Refused: in.Refused, Programs: in.Programs,
		Capabilities: read("capabilities.xml"), DomainCapabilities: read("domcapabilities.xml")}
	if b, err := os.ReadFile(filepath.Join(dir, "cpufeatures.xml")); err == nil {
		docs.CPUFeatures = b
	}
	files, _ := filepath.Glob(filepath.Join(dir, "firmware", "*.json"))
	slices.Sort(files)
	for _, f := range files {
		docs.Firmware = append(docs.Firmware, hostcaps.Descriptor{Name: filepath.Base(f), JSON: read(filepath.Join("firmware", filepath.Base(f)))})
	}
	return docs
}

// TestFacts checks the facts of each testdata case against its facts.json
// (checked by hand against the documents when written): this host's
// captured documents (debian12-emulated) and two written after libvirt's
// documentation.
func TestFacts(t *testing.T) {
	if *update && os.Getenv("CI") != "" {
		t.Fatal("-update refuses to run when CI is set")
	}
	dirs, _ := filepath.Glob("testdata/*")
	if len(dirs) < 3 {
		t.Fatalf("want at least 3 cases in testdata, found %v", dirs)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			facts, err := hostcaps.Facts(readCase(t, dir))
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(facts, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			checkGolden(t, filepath.Join(dir, "facts.json"), got)
		})
	}
}

// checkGolden compares got with the golden file, or rewrites it with
// -update.
func checkGolden(t *testing.T, file string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(file, got, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s: check it by hand", file)
		return
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\n%s", file, golden.LineDiff(string(want), string(got)))
	}
}

// Documents that are not libvirt's XML or JSON are errors, not facts.
func TestFactsBadDocuments(t *testing.T) {
	good := readCase(t, "testdata/libvirt-docs-minimal")
	for name, edit := range map[string]func(*hostcaps.Documents){
		"capabilities":        func(d *hostcaps.Documents) { d.Capabilities = []byte("<capabilities") },
		"domain capabilities": func(d *hostcaps.Documents) { d.DomainCapabilities = []byte("not xml") },
		"firmware":            func(d *hostcaps.Documents) { d.Firmware = []hostcaps.Descriptor{{Name: "x.json", JSON: []byte("{")}} },
		"cpu features":        func(d *hostcaps.Documents) { d.CPUFeatures = []byte("<cpu") },
	} {
		docs := good
		edit(&docs)
		if _, err := hostcaps.Facts(docs); err == nil {
			t.Errorf("%s: a broken document gives facts", name)
		}
	}
}

// Each probe's domain is one libvirt defines without its form: the same
// domain with the form removed is what every libvirt the launcher
// supports defines (the launcher's tests define both on this host).
func TestProbesDomains(t *testing.T) {
	seen := map[convert.Lack]bool{}
	for _, p := range hostcaps.Probes {
		if seen[p.Lack] {
			t.Errorf("two probes for %s", p.Lack)
		}
		seen[p.Lack] = true
		xml := p.Domain("probe", "qemu")
		if !bytes.Contains([]byte(xml), []byte(`<name>probe</name>`)) || !bytes.HasPrefix([]byte(xml), []byte(`<domain type="qemu">`)) {
			t.Errorf("%s: %s", p.Lack, xml)
		}
	}
}
