package convert_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/internal/fixtures"
	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/golden"
)

// update rewrites the golden files from the converter's output instead of
// comparing with them: go test ./convert -run TestGolden -update.
var update = flag.Bool("update", false, "rewrite convert/testdata/*/domain.xml and error.txt (refused when CI is set)")

// TestGolden checks every case folder of convert/testdata, in the case
// format of internal/fixtures (testdata/README.md describes it), one
// subtest per folder: fixtures.Check compares the case's domain.xml with
// the domain its VMI converts to, or its error.txt with the pipeline's
// message, and finds folders that are not well-formed cases. Each
// domain.xml is also checked for determinism, canonical form (libvirtxml
// round trip) and libvirt's schema. The expected files are checked by hand
// when written; each case's name says what it covers.
func TestGolden(t *testing.T) {
	if *update && os.Getenv("CI") != "" {
		t.Fatal("-update refuses to run when CI is set: golden files are written by hand-checked runs only")
	}
	cases, stray, err := fixtures.Cases("testdata")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stray {
		t.Errorf("%s: only case folders and %s belong in testdata", s, fixtures.NotesFile)
	}
	for _, dir := range cases {
		t.Run(filepath.Base(dir), func(t *testing.T) { runCase(t, dir) })
	}
}

// runCase checks (or, with -update, writes) one case folder.
func runCase(t *testing.T, dir string) {
	if *update {
		out, err := fixtures.Update(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out {
			if o.State == fixtures.Broken {
				t.Errorf("%s: %s", o.Dir, o.Problem)
			}
			for _, f := range o.Changed {
				t.Logf("wrote or removed %s: read it and check it by hand before you commit it", f)
			}
		}
		return
	}
	out, err := fixtures.Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range out {
		if o.State != fixtures.Fresh {
			t.Fatalf("%s: %s (rewrite with -update, then check by hand)\n%s", o.Dir, o.Problem, o.Diff)
		}
	}
	c, err := fixtures.ReadCase(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.Domain == nil {
		return // a refused case: its message is what Check compared
	}
	first, err := pipeline.FromDocument(c.VMI, c.Config)
	if err != nil {
		t.Fatalf("%s: the pipeline failed: %v", dir, err)
	}
	checkDeterministic(t, c, first)
	golden.CheckRoundTrip(t, c.Domain)
	if form, ok := newerLibvirtCases[filepath.Base(dir)]; ok {
		t.Logf("schema not checked: the domain has %s, a form of KubeVirt's libvirt that this host's schema may lack", form)
		return
	}
	golden.CheckSchema(t, filepath.Join(dir, fixtures.DomainFile))
}

// newerLibvirtCases are the cases converted for KubeVirt's libvirt (no
// host facts) whose domain has a form that Debian 12's libvirt 9.0, and so
// its schema, lacks: their schema check is skipped (each has an -err- twin
// refused for a host that lacks the form).
var newerLibvirtCases = map[string]convert.Lack{
	"compute-features-hyperv-tlbflush-direct": convert.LackTLBFlushDirectExtended,
	"devices-pvpanic":                         convert.LackPvpanic,
	"storage-discard-granularity":             convert.LackDiscardGranularity,
	"storage-iothreads-pool":                  convert.LackDiskIOThreads,
	"storage-iothreads-pool-dedicated":        convert.LackDiskIOThreads,
}

// checkDeterministic runs the pipeline again and converts the same VMI
// again: both must give the same bytes, and Convert must leave its VMI as it
// found it.
func checkDeterministic(t *testing.T, c fixtures.Case, first pipeline.Result) {
	t.Helper()
	again, err := pipeline.FromDocument(c.VMI, c.Config)
	if err != nil {
		t.Fatalf("second run failed: %v", err)
	}
	if !bytes.Equal(again.XML, first.XML) {
		t.Errorf("not deterministic: a second run gives other XML:\n%s", golden.LineDiff(string(first.XML), string(again.XML)))
	}
	before := first.VMI.DeepCopy()
	d, err := convert.Convert(first.VMI, c.Config.Options)
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
