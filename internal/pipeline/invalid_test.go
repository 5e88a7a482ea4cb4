package pipeline

import (
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/internal/fixtures"
	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

// update rewrites the .err files of the invalid-VMI catalogue from the
// pipeline's errors: go test ./internal/pipeline -run TestInvalid -update.
var update = flag.Bool("update", false, "rewrite testdata/invalid/*.err (refused when CI is set); read every written file before committing it")

// invalidDir holds the catalogue: <family>-<name>.yaml, the smallest VMI
// that breaks one rule; <family>-<name>.err, the exact error it must give
// followed by one newline; optionally <family>-<name>.options.yaml, the
// options it is converted with.
const invalidDir = "testdata/invalid"

// File name endings of the catalogue.
const (
	caseExt    = ".yaml"
	errExt     = ".err"
	optionsExt = ".options.yaml"
	readmeFile = "README.md"
)

// pathStart matches an error that starts with a field path a user finds in
// their YAML: a top-level key, then .child, [index or key] and ["quoted
// key"] parts, then ": ".
var pathStart = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(\.[A-Za-z0-9_-]+|\[[^]"]*\]|\["(\\.|[^"\\])*"\])*: `)

// syntaxPlace matches a document-level error that says where the problem
// is: a line (YAML) or a byte offset (JSON).
var syntaxPlace = regexp.MustCompile(`\bline \d+\b|\bbyte \d+\b|\boffset \d+\b`)

// wholeDocument are the errors that concern the whole document, so that no
// line or path can name them (nesting too deep, aliases expanding too far),
// and one the YAML library reports without a place: a mapping key that is
// not a name (a list, a mapping; a null key is given its line when it can be
// found).
var wholeDocument = []string{
	"empty document", "document of ", "document is not an object", "document is not a JSON or YAML object",
	"invalid YAML: exceeded max depth", "invalid YAML: document contains excessive aliasing",
	"invalid YAML: a mapping key is ",
}

// TestInvalid runs every VMI of the catalogue through the pipeline (Run)
// and compares its error with the case's .err file, byte for byte. Each
// .err was read by hand when written: it must name the path of the one
// field the case breaks. The test also fails on a case without .err, an
// .err or options file without its case, and an error that does not start
// with a field path (or, for a document that is not YAML, name a line).
func TestInvalid(t *testing.T) {
	if *update && os.Getenv("CI") != "" {
		t.Fatal("-update refuses to run when CI is set: .err files are written by hand-checked runs only")
	}
	entries, err := os.ReadDir(invalidDir)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, e := range entries {
		have[e.Name()] = true
	}
	var cases []string
	for _, e := range entries {
		name := e.Name()
		switch {
		case e.IsDir():
			t.Errorf("%s/%s: no folders belong in the catalogue", invalidDir, name)
		case name == readmeFile:
		case strings.HasSuffix(name, optionsExt):
			if !have[strings.TrimSuffix(name, optionsExt)+caseExt] {
				t.Errorf("%s/%s: options of no case", invalidDir, name)
			}
		case strings.HasSuffix(name, caseExt):
			cases = append(cases, strings.TrimSuffix(name, caseExt))
		case strings.HasSuffix(name, errExt):
			if !have[strings.TrimSuffix(name, errExt)+caseExt] {
				t.Errorf("%s/%s: orphan .err: no %s", invalidDir, name, strings.TrimSuffix(name, errExt)+caseExt)
			}
		default:
			t.Errorf("%s/%s: unknown file (the catalogue holds <case>.yaml, <case>.err, <case>.options.yaml and %s)", invalidDir, name, readmeFile)
		}
	}
	sort.Strings(cases)
	if len(cases) < 150 {
		t.Errorf("%d cases: the catalogue must hold at least 150", len(cases))
	}
	for _, name := range cases {
		t.Run(name, func(t *testing.T) { runInvalid(t, name) })
	}
}

// runInvalid checks (or, with -update, writes) one case of the catalogue.
func runInvalid(t *testing.T, name string) {
	base := filepath.Join(invalidDir, name)
	if strings.IndexByte(name, '-') <= 0 {
		t.Errorf("%s: name a case <family>-<name>", base+caseExt)
	}
	data, err := os.ReadFile(base + caseExt)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := fixtures.LoadConfig(base + optionsExt)
	if err != nil {
		t.Fatal(err)
	}
	res, runErr := pipeline.FromDocument(data, cfg)
	if runErr == nil {
		t.Fatalf("%s converted, but every case of the catalogue must be refused:\n%s", base+caseExt, res.XML)
	}
	got := runErr.Error() + "\n"
	checkMessage(t, got)
	if *update {
		if err := os.WriteFile(base+errExt, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(base + errExt)
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%s: missing (write it with -update, then read it): the pipeline says\n%s", base+errExt, got)
	}
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\nwant %s got  %s", base+errExt, want, got)
	}
}

// checkMessage checks what every catalogue error must be: one line, one
// error (not a list: each case breaks one rule), naming a field path at its
// start, or for a document that is not a VMI at all a line or byte, and no
// leftovers of formatting mistakes.
func checkMessage(t *testing.T, msg string) {
	t.Helper()
	line := strings.TrimSuffix(msg, "\n")
	switch {
	case strings.Contains(line, "\n"):
		t.Errorf("the error spans several lines: %q", line)
	case strings.HasPrefix(line, "["):
		t.Errorf("the case breaks more than one rule: %s", line)
	case strings.Contains(line, "%!"), strings.Contains(line, "<nil>"):
		t.Errorf("formatting mistake in the error: %s", line)
	}
	if !namesPlace(line) {
		t.Errorf("the error names no field path (nor a line or byte): %s", line)
	}
}

// namesPlace tells whether an error message says where the problem is: it
// starts with a field path (the first error of an aggregate too), names a
// line or byte, or concerns the whole document.
func namesPlace(msg string) bool {
	msg = strings.TrimPrefix(msg, "[")
	if pathStart.MatchString(msg) || syntaxPlace.MatchString(msg) {
		return true
	}
	for _, prefix := range wholeDocument {
		if strings.HasPrefix(msg, prefix) {
			return true
		}
	}
	return false
}
