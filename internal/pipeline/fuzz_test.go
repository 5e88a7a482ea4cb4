package pipeline

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

// maxFuzzInput bounds the documents FuzzPipeline converts: large enough for
// every golden VMI (the largest is a few KiB), small enough that one input
// never takes long.
const maxFuzzInput = 64 << 10

// fuzzDeadline is how long one input may take before FuzzPipeline calls it
// a hang. A pipeline run takes well under a millisecond.
const fuzzDeadline = 10 * time.Second

// seedSources are the VMI files FuzzPipeline starts from: it adds them all
// at run time (so that golden cases added later are seeds too), and the
// committed seed corpus (testdata/fuzz/FuzzPipeline) is made of the golden
// and example VMIs.
var seedSources = []struct {
	glob, prefix string
	committed    bool
}{
	{"../../convert/testdata/*/vmi.yaml", "golden-", true},
	{"../../examples/vmis/*.yaml", "example-", true},
	{"testdata/invalid/*.yaml", "invalid-", false},
}

// fuzzOptions are the conversions each fuzzed VMI goes through: KubeVirt's
// pod layout and a plain host layout.
func fuzzOptions() []convert.Options {
	host := convert.KubeVirtOptions()
	host.Layout = convert.HostLayout{StateDir: "/var/lib/vmi2libvirt/vmis", ImageStore: "/var/lib/vmi2libvirt/images"}
	host.DomainType = "qemu"
	return []convert.Options{convert.KubeVirtOptions(), host}
}

// FuzzPipeline runs the whole pure pipeline (Run) on fuzzed documents with
// both layouts and checks that it never panics or hangs, that every error
// says where the problem is (namesPlace), that every domain
// it makes survives domain.Unmarshal and domain.Marshal unchanged (same
// bytes; no field-by-field difference from the converted domain, once the
// empty sub-structs libvirtxml's Unmarshal fills in are given to it too —
// see withUnmarshalFill — and domain.Diff empty against a second
// unmarshal) and that converting
// the same VMI again gives the same bytes.
//
//	go test ./internal/pipeline -run '^$' -fuzz FuzzPipeline -fuzztime 10m -parallel 1 -fuzzminimizetime 3s
func FuzzPipeline(f *testing.F) {
	for _, src := range seedSources {
		files, err := filepath.Glob(src.glob)
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
	opts := fuzzOptions()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > maxFuzzInput {
			return
		}
		done := make(chan error, 1)
		go func() {
			var err error
			for _, o := range opts {
				if err = checkPipeline(data, o); err != nil {
					break
				}
			}
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(fuzzDeadline):
			t.Fatalf("the pipeline took more than %v on:\n%q", fuzzDeadline, data)
		}
	})
}

// checkPipeline runs one document through the pipeline with opts and checks
// the domain it makes, returning the first problem. (It runs on a goroutine
// of its own, so that a hang can be reported: it must not use t.)
func checkPipeline(data []byte, opts convert.Options) error {
	xml, err := Run(data, api.ClusterConfig{}, opts)
	if err != nil {
		// Decode's field errors carry the keys of the document as
		// written, whatever they are ("0: unknown field").
		var de *api.InvalidError
		if errors.As(err, &de) && de.Stage == api.StageDecode && len(de.Errors) > 0 {
			return nil
		}
		if !namesPlace(err.Error()) {
			return fmt.Errorf("the error names no field path, line or byte: %v", err)
		}
		return nil
	}
	// The same stages again, keeping the domain value.
	vmi, err := api.Decode(data)
	if err != nil {
		return fmt.Errorf("Run converted the document, Decode now fails: %v", err)
	}
	api.Default(vmi, api.ClusterConfig{})
	if errs := api.Validate(vmi); len(errs) > 0 {
		return fmt.Errorf("Run converted the document, Validate now fails: %v", errs.ToAggregate())
	}
	var domains [2]*libvirtxml.Domain
	for i := range domains {
		if domains[i], err = convert.Convert(vmi, opts); err != nil {
			return fmt.Errorf("Run converted the document, Convert #%d now fails: %v", i+1, err)
		}
		again, err := domain.Marshal(domains[i])
		if err != nil {
			return fmt.Errorf("marshal #%d: %v", i+1, err)
		}
		if !bytes.Equal(again, xml) {
			return fmt.Errorf("converting the same document again gives other XML:\n%s\n---\n%s", xml, again)
		}
	}
	parsed, err := domain.Unmarshal(xml)
	if err != nil {
		return fmt.Errorf("the domain does not unmarshal: %v\n%s", err, xml)
	}
	re, err := domain.Marshal(parsed)
	if err != nil {
		return fmt.Errorf("the unmarshalled domain does not marshal: %v\n%s", err, xml)
	}
	if !bytes.Equal(re, xml) {
		return fmt.Errorf("unmarshal + marshal changes the XML:\n%s\n---\n%s", xml, re)
	}
	if d := cmp.Diff(withUnmarshalFill(domains[0], parsed), parsed, rawDiff); d != "" {
		return fmt.Errorf("the unmarshalled domain differs from the converted one (-converted +unmarshalled):\n%s\n%s", d, xml)
	}
	again, err := domain.Unmarshal(re)
	if err != nil {
		return fmt.Errorf("the re-marshalled domain does not unmarshal: %v\n%s", err, re)
	}
	if d := domain.Diff(parsed, again); d != "" {
		return fmt.Errorf("a second unmarshal differs from the first:\n%s\n%s", d, xml)
	}
	return nil
}

// rawDiff compares the converted domain with the unmarshalled one field by
// field as they are, unlike domain.Diff (which compares what each marshals
// to): a field the converter sets that libvirtxml never writes shows up.
var rawDiff = cmp.Options{cmpopts.IgnoreTypes(xml.Name{}), cmpopts.EquateEmpty()}

// withUnmarshalFill gives d the empty sub-structs that libvirtxml's
// Unmarshal fills in where parsed has them and d has nil (a controller's
// USB and VirtIOSerial, an input's Source): they marshal to nothing, so the
// XML is the same, but domain.Diff tells nil from a pointer to an empty
// struct. Nothing else is changed; d is modified in place.
func withUnmarshalFill(d, parsed *libvirtxml.Domain) *libvirtxml.Domain {
	if d.Devices == nil || parsed.Devices == nil {
		return d
	}
	for i := range d.Devices.Controllers {
		if i >= len(parsed.Devices.Controllers) {
			break
		}
		c, p := &d.Devices.Controllers[i], parsed.Devices.Controllers[i]
		if c.USB == nil && p.USB != nil && reflect.ValueOf(*p.USB).IsZero() {
			c.USB = &libvirtxml.DomainControllerUSB{}
		}
		if c.VirtIOSerial == nil && p.VirtIOSerial != nil && reflect.ValueOf(*p.VirtIOSerial).IsZero() {
			c.VirtIOSerial = &libvirtxml.DomainControllerVirtIOSerial{}
		}
	}
	for i := range d.Devices.Inputs {
		if i >= len(parsed.Devices.Inputs) {
			break
		}
		in, p := &d.Devices.Inputs[i], parsed.Devices.Inputs[i]
		if in.Source == nil && p.Source != nil && reflect.ValueOf(*p.Source).IsZero() {
			in.Source = &libvirtxml.DomainInputSource{}
		}
	}
	return d
}

// updateSeeds rewrites the committed seed corpus from seedSources.
var updateSeeds = flag.Bool("update-seeds", false, "rewrite testdata/fuzz/FuzzPipeline/{golden,example}-* from the VMI files they are made of")

// TestSeedCorpus writes (with -update-seeds) the committed seed corpus of
// FuzzPipeline, one file in Go's corpus format ("go test fuzz v1") per
// golden VMI and example VMI; a plain `go test`
// runs those files as ordinary tests of FuzzPipeline. Without the flag it
// only logs the sources whose committed seed is missing or older than the
// source (FuzzPipeline adds every source at run time anyway).
func TestSeedCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzPipeline")
	if *updateSeeds {
		if os.Getenv("CI") != "" {
			t.Fatal("-update-seeds refuses to run when CI is set")
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, src := range seedSources {
		if !src.committed {
			continue
		}
		files, err := filepath.Glob(src.glob)
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			name := src.prefix + seedName(file)
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			seed := corpusFile(data)
			path := filepath.Join(dir, name)
			if *updateSeeds {
				if err := os.WriteFile(path, seed, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Logf("%s: no seed yet (write it with -update-seeds)", file)
				continue
			}
			if !bytes.Equal(got, seed) {
				t.Logf("%s: seed %s is older than its source (rewrite it with -update-seeds)", file, path)
			}
		}
	}
}

// seedName names the seed of a VMI file: the case folder of a golden
// vmi.yaml, else the file's base name without .yaml.
func seedName(file string) string {
	base := filepath.Base(file)
	if base == "vmi.yaml" {
		return filepath.Base(filepath.Dir(file))
	}
	return strings.TrimSuffix(base, ".yaml")
}

// corpusFile encodes one []byte input in Go's fuzz corpus format.
func corpusFile(data []byte) []byte {
	return fmt.Appendf(nil, "go test fuzz v1\n[]byte(%s)\n", strconv.Quote(string(data)))
}
