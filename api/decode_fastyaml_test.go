package api

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// fastYAMLSeeds are the documents of the project: samples, golden cases
// and the invalid-VMI catalogue.
func fastYAMLSeeds(tb testing.TB) map[string][]byte {
	tb.Helper()
	seeds := map[string][]byte{}
	for _, glob := range []string{"testdata/*.yaml", "../examples/vmis/*.yaml", "../convert/testdata/*/vmi.yaml", "../internal/pipeline/testdata/invalid/*.yaml"} {
		files, err := filepath.Glob(glob)
		if err != nil {
			tb.Fatal(err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				tb.Fatal(err)
			}
			seeds[f] = data
		}
	}
	if len(seeds) == 0 {
		tb.Fatal("no YAML documents found")
	}
	return seeds
}

// checkFastYAML fails when the fast path reads data but differs from the
// YAML library's conversion (or the library refuses data).
func checkFastYAML(t *testing.T, name string, data []byte) bool {
	got, ok := fastYAMLToJSON(data)
	if !ok {
		return false
	}
	want, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		t.Fatalf("%s: the fast path read a document the YAML library refuses (%v):\n%s", name, err, data)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: the fast path differs from the YAML library:\n got %s\nwant %s", name, got, want)
	}
	return true
}

// TestFastYAML: every document of the project that the fast path reads
// gives the YAML library's JSON, and every sample of examples/vmis takes
// the fast path.
func TestFastYAML(t *testing.T) {
	fast := 0
	seeds := fastYAMLSeeds(t)
	for name, data := range seeds {
		ok := checkFastYAML(t, name, data)
		if ok {
			fast++
		}
		if !ok && strings.HasPrefix(name, "../examples/vmis/") {
			t.Errorf("%s: the sample does not take the fast path", name)
		}
	}
	t.Logf("%d of %d documents take the fast path", fast, len(seeds))
}

// TestFastYAMLScalars: how plain and quoted scalars resolve, against the
// YAML library.
func TestFastYAMLScalars(t *testing.T) {
	for _, v := range []string{
		"a", "yes", "No", "on", "OFF", "y", "n", "~", "null", "NULL", "true", "False",
		"0", "7", "-3", "-0", "007", "0x1f", "0o17", "0b101", "1_000", "1.5", ".5", ".inf", "-.inf", ".nan", "1e3",
		"123456789012345678", "1234567890123456789", "99999999999999999999",
		"2Gi", "64Mi", "10.0.2.2", "2020-01-02", "2020-01-02T03:04:05Z", "http://x/y", "a#b", "a #b",
		"'it''s'", `"q<>&"`, `"a\nb"`, "'a' # c", "<<", "-x", "+1", "1:30", "a b  c",
		"5d307ca9-b3ef-428c-8861-06e72d69f223", "0.5", "1.", "-.5", "0b", "0b2", "+0x1f", "1e", "1f", "1e3x", ".x", "0xg", "-0b11", "1__0",
	} {
		checkFastYAML(t, v, []byte("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata:\n  name: "+v+"\n"))
	}
}

// FuzzFastYAML checks the fast path against the YAML library on the
// project's documents and their mutations: whenever it reads a document,
// the JSON must be the library's.
func FuzzFastYAML(f *testing.F) {
	for _, data := range fastYAMLSeeds(f) {
		f.Add(data)
	}
	f.Add([]byte("a: |\n  x\n\n  y\n\n\nb: |-\n    z\n   \n"))
	f.Add([]byte("a:\n- b: 1\n  c: [] # x\n- 'd'\n-   e: {}\n    f: \"g\"\n"))
	f.Add([]byte("a:\n  b: 'x ''y\n    z'\n- 'w\n   v'\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFastYAML(t, "input", data)
	})
}

// TestFastYAMLQuotedLines: single-quoted scalars wrapped over lines, as
// YAML writers wrap long annotations, take the fast path and give the YAML
// library's JSON; the forms the fast path leaves to the library do not.
func TestFastYAMLQuotedLines(t *testing.T) {
	const head = "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata:\n  annotations:\n"
	for _, c := range []struct {
		value string
		fast  bool
	}{
		{"    hook: '[{\"args\": [\"--version\", \"v1alpha2\"], \"image\":\n      \"registry:5000/hook:devel\"}]'\n", true},
		{"    a: 'one\n      two\n        three  '\n    b: c\n", true},
		{"    a: 'it''s\n      ''quoted'''\n", true},
		{"    a: '\n      starts on the next line'\n", true},
		{"    a: 'ends with a space\n      '\n", true},
		{"    a: 'spaces   \n         around   \n      lines'   \n", true},
		{"    a: 'then a blank line'\n\n    b: c\n", true},
		{"    a: 'one\n\n      two'\n", false},        // a kept line break
		{"    a: 'one\n    two'\n", false},            // continued at the key's indentation
		{"    a: 'one # two\n      three'\n", false},  // '#' on the key's line
		{"    a: 'one\n      # two'\n", false},        // a line that looks like a comment
		{"    a: 'one\n      two' x\n", false},        // text after the closing quote
		{"    a: 'one\n      two'\n      c\n", false}, // more text below
		{"    a: 'never closed\n      two\n", false},
	} {
		data := []byte(head + c.value + "  name: x\n")
		if got := checkFastYAML(t, c.value, data); got != c.fast {
			t.Errorf("%q: fast path %v, want %v", c.value, got, c.fast)
		}
	}
}
