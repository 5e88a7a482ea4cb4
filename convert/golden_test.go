package convert_test

import (
	"bytes"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/internal/fixtures"
	"github.com/vmi2libvirt/vmi2libvirt/internal/pipeline"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/golden"
)

// update rewrites the golden files from the converter's output instead of
// comparing with them: go test ./convert -run TestGolden -update.
var update = flag.Bool("update", false, "rewrite convert/testdata/*/domain.xml and error.txt (refused when CI is set)")

// Files of a case folder (testdata/README.md describes them).
const (
	vmiFile     = "vmi.yaml"
	domainFile  = "domain.xml"
	errorFile   = "error.txt"
	optionsFile = "options.yaml"
	notesFile   = "README.md"
)

// caseFiles are the only files a case folder may hold.
var caseFiles = []string{vmiFile, domainFile, errorFile, optionsFile, notesFile}

// TestGolden converts every convert/testdata/<case>/vmi.yaml and compares
// the result with the case's domain.xml, or the pipeline's error message
// with its error.txt. Each domain.xml is also checked for determinism,
// canonical form (libvirtxml round trip) and libvirt's schema. The expected
// files are checked by hand when written; each case's name says what it
// covers.
func TestGolden(t *testing.T) {
	if *update && os.Getenv("CI") != "" {
		t.Fatal("-update refuses to run when CI is set: golden files are written by hand-checked runs only")
	}
	entries, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	cases := 0
	for _, e := range entries { // os.ReadDir sorts by name
		if !e.IsDir() {
			if e.Name() != notesFile {
				t.Errorf("testdata/%s: only case folders and %s belong in testdata", e.Name(), notesFile)
			}
			continue
		}
		cases++
		dir := filepath.Join("testdata", e.Name())
		t.Run(e.Name(), func(t *testing.T) { runCase(t, dir) })
	}
	if cases == 0 {
		t.Error("no cases under testdata")
	}
}

// runCase checks (or, with -update, writes) one case folder.
func runCase(t *testing.T, dir string) {
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range files {
		have[f.Name()] = true
		if f.IsDir() || !slices.Contains(caseFiles, f.Name()) {
			t.Errorf("%s/%s: unknown file (a case holds only %s)", dir, f.Name(), strings.Join(caseFiles, ", "))
		}
	}
	if !have[vmiFile] {
		t.Fatalf("%s: orphan case folder: no %s", dir, vmiFile)
	}
	if !*update {
		switch {
		case have[domainFile] && have[errorFile]:
			t.Fatalf("%s: both %s and %s: a case either converts or fails", dir, domainFile, errorFile)
		case !have[domainFile] && !have[errorFile]:
			t.Fatalf("%s: orphan case folder: neither %s nor %s (write them with -update, then check them by hand)", dir, domainFile, errorFile)
		}
	}

	data, err := os.ReadFile(filepath.Join(dir, vmiFile))
	if err != nil {
		t.Fatal(err)
	}
	opts, cfg, err := fixtures.LoadOptions(filepath.Join(dir, optionsFile))
	if err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	res, runErr := pipeline.Convert(data, cfg, opts)

	if *update {
		writeCase(t, dir, res.XML, runErr)
		return
	}

	if have[errorFile] {
		want, err := os.ReadFile(filepath.Join(dir, errorFile))
		if err != nil {
			t.Fatal(err)
		}
		if runErr == nil {
			t.Fatalf("%s: the VMI converted, but %s says it must fail with:\n%s", dir, errorFile, want)
		}
		if got := runErr.Error() + "\n"; got != string(want) {
			t.Errorf("%s: error message differs (-want +got):\n%s", dir, golden.LineDiff(string(want), got))
		}
		return
	}

	file := filepath.Join(dir, domainFile)
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if runErr != nil {
		t.Fatalf("%s: the pipeline failed: %v", dir, runErr)
	}
	if !bytes.Equal(res.XML, want) {
		t.Errorf("%s differs from the converter's output (rewrite with -update, then check by hand):\n%s", file, golden.Explain(want, res.XML))
	}
	checkDeterministic(t, data, cfg, opts, res)
	golden.CheckRoundTrip(t, want)
	golden.CheckSchema(t, file)
}

// checkDeterministic runs the pipeline again and converts the same VMI
// again: both must give the same bytes, and Convert must leave its VMI as it
// found it.
func checkDeterministic(t *testing.T, data []byte, cfg api.ClusterConfig, opts convert.Options, first pipeline.Result) {
	t.Helper()
	again, err := pipeline.Convert(data, cfg, opts)
	if err != nil {
		t.Fatalf("second run failed: %v", err)
	}
	if !bytes.Equal(again.XML, first.XML) {
		t.Errorf("not deterministic: a second run gives other XML:\n%s", golden.LineDiff(string(first.XML), string(again.XML)))
	}
	before := first.VMI.DeepCopy()
	d, err := convert.Convert(first.VMI, opts)
	if err != nil {
		t.Fatalf("converting the same VMI again failed: %v", err)
	}
	if !reflect.DeepEqual(before, first.VMI) {
		t.Error("Convert modified the VMI it was given")
	}
	xml, err := domain.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(xml, first.XML) {
		t.Errorf("not deterministic: converting the same VMI again gives other XML:\n%s", golden.LineDiff(string(first.XML), string(xml)))
	}
}

// writeCase writes a case's domain.xml or error.txt and removes the other.
func writeCase(t *testing.T, dir string, xml []byte, runErr error) {
	t.Helper()
	name, content, stale := domainFile, xml, errorFile
	if runErr != nil {
		name, content, stale = errorFile, []byte(runErr.Error()+"\n"), domainFile
	}
	if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, stale)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	t.Logf("wrote %s/%s: read it and check it by hand before you commit it", dir, name)
}
