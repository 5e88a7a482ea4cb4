package vmigen_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/golden"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/vmigen"
)

// propertyConfigs are the four sequences the properties run over: both
// profiles, both layouts.
var propertyConfigs = []vmigen.Config{
	{Seed: 1, Profile: vmigen.Supported, Layout: vmigen.KubeVirtLayout},
	{Seed: 1, Profile: vmigen.Supported, Layout: vmigen.HostLayout},
	{Seed: 1, Profile: vmigen.KubeVirt, Layout: vmigen.KubeVirtLayout},
	{Seed: 1, Profile: vmigen.KubeVirt, Layout: vmigen.HostLayout},
}

// propertyCount is how many VMIs of each sequence the properties check:
// 4 × 1000 (4 × 250 with -short).
func propertyCount() int {
	if testing.Short() {
		return 250
	}
	return 1000
}

// maxRefusedKubeVirt bounds the share of the KubeVirt profile's VMIs the
// project refuses today (46% measured with seed 1 at this commit; every
// one of them at a field the profile drew beyond the Supported
// vocabulary). The feature work of issue 21 lowers it; lower the bound
// with it.
const maxRefusedKubeVirt = 0.52

// TestProperties checks, on every VMI of each sequence: that api accepts
// it once defaulted (valid by construction); that its YAML decodes
// (api.Decode) to the same VMI; that the converter never panics and either
// converts it or refuses it with field errors — never a Supported VMI, and
// a KubeVirt one only at the fields Case.Refusable names; that converting
// leaves the VMI untouched and twice gives the same bytes; that the
// domain's XML survives libvirtxml's unmarshal and domain.Marshal
// unchanged; and that every domain passes libvirt's schema. It logs the
// refusals by field (go test -v).
//
//	go test ./testkit/vmigen -run TestProperties -v
func TestProperties(t *testing.T) {
	for _, cfg := range propertyConfigs {
		t.Run(cfg.Profile.String()+"/"+cfg.Layout.String(), func(t *testing.T) {
			t.Parallel()
			n := propertyCount()
			dir := t.TempDir()
			var files []string
			refused, newer := 0, 0
			byField := map[string]int{}
			for i := range n {
				c := vmigen.Generate(cfg, i)
				xml, errs := checkCase(t, c)
				if len(errs) > 0 {
					refused++
					seen := map[string]bool{}
					for _, fe := range errs {
						f := normalizePath(fe.Field)
						if !seen[f] {
							seen[f] = true
							byField[f]++
						}
					}
					continue
				}
				if xml == nil {
					continue // failed, reported
				}
				if len(c.NewerForms) > 0 {
					newer++ // a newer libvirt's domain: this host's schema lacks its forms
					continue
				}
				file := filepath.Join(dir, fmt.Sprintf("%05d.xml", i))
				if err := os.WriteFile(file, xml, 0o644); err != nil {
					t.Fatal(err)
				}
				files = append(files, file)
			}
			golden.CheckSchemaFiles(t, files)
			t.Logf("%d VMIs: %d converted and schema-checked, %d converted with a newer libvirt's forms (not schema-checked), %d refused", n, len(files), newer, refused)
			for _, f := range sortedByCount(byField) {
				t.Logf("  refused %4d  %s", byField[f], f)
			}
			switch cfg.Profile {
			case vmigen.Supported:
				if refused > 0 {
					t.Errorf("%d Supported VMIs refused", refused)
				}
			case vmigen.KubeVirt:
				if share := float64(refused) / float64(n); share > maxRefusedKubeVirt {
					t.Errorf("%.0f%% of the KubeVirt profile's VMIs refused, more than the %.0f%% bound", 100*share, 100*maxRefusedKubeVirt)
				}
				if refused == 0 {
					t.Errorf("no KubeVirt-profile VMI refused: the profile draws nothing beyond the Supported vocabulary, or the bound should go")
				}
			}
		})
	}
}

// checkCase checks one case (see TestProperties). It returns the domain's
// XML, or the field errors of validation or the converter for a VMI they
// refused as allowed;
// (nil, nil) after reporting a failure.
func checkCase(t *testing.T, c vmigen.Case) ([]byte, field.ErrorList) {
	t.Helper()
	name := c.VMI.Name
	doc, err := vmigen.YAML(c.VMI)
	if err != nil {
		t.Errorf("%s: YAML: %v", name, err)
		return nil, nil
	}
	fail := func(format string, args ...any) {
		t.Errorf("%s: %s\n%s", name, fmt.Sprintf(format, args...), doc)
	}
	decoded, err := api.Decode(doc)
	switch {
	case err != nil:
		fail("api.Decode of its YAML: %v", err)
		return nil, nil
	case !apiequality.Semantic.DeepEqual(decoded, c.VMI):
		fail("api.Decode of its YAML gives another VMI")
		return nil, nil
	}
	vmi := c.VMI.DeepCopy()
	api.Default(vmi, api.ClusterConfig{})
	if errs := api.Validate(vmi); len(errs) > 0 {
		// What KubeVirt admits beyond the Supported vocabulary may be
		// refused by validation (a form this library refuses for every
		// host), at the fields drawn there only.
		for _, fe := range errs {
			if !refusable(fe.Field, c.Refusable) {
				fail("api.Validate refuses it at %q, not a field drawn beyond the Supported vocabulary (%v): %v", fe.Field, c.Refusable, errs)
				return nil, nil
			}
		}
		return nil, errs
	}
	before := vmi.DeepCopy()
	d, err := convertSafely(vmi, c.Options)
	if !reflect.DeepEqual(before, vmi) {
		fail("convert.Convert changed the VMI")
	}
	if err != nil {
		var ce *api.InvalidError
		if !errors.As(err, &ce) || len(ce.Errors) == 0 {
			fail("refused without field errors: %v", err)
			return nil, nil
		}
		for _, fe := range ce.Errors {
			if fe.Field == "" || !refusable(fe.Field, c.Refusable) {
				fail("refused at %q, not a field drawn beyond the Supported vocabulary (%v): %v", fe.Field, c.Refusable, fe)
				return nil, nil
			}
		}
		return nil, ce.Errors
	}
	xml, err := domain.Marshal(d)
	if err != nil {
		fail("domain.Marshal: %v", err)
		return nil, nil
	}
	d2, err := convertSafely(vmi, c.Options)
	if err != nil {
		fail("second conversion: %v", err)
		return nil, nil
	}
	if xml2, err := domain.Marshal(d2); err != nil || !bytes.Equal(xml, xml2) {
		fail("two conversions give different XML (%v):\n%s", err, golden.LineDiff(string(xml), string(xml2)))
		return nil, nil
	}
	back, err := domain.Unmarshal(xml)
	if err != nil {
		fail("domain.Unmarshal of its domain: %v", err)
		return nil, nil
	}
	if again, err := domain.Marshal(back); err != nil || !bytes.Equal(again, xml) {
		fail("libvirtxml round trip changes the domain (%v):\n%s", err, golden.LineDiff(string(xml), string(again)))
		return nil, nil
	}
	return xml, nil
}

// convertSafely is convert.Convert with a panic turned into an error.
func convertSafely(vmi *v1.VirtualMachineInstance, opts convert.Options) (d *libvirtxml.Domain, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("convert.Convert panicked: %v", p)
		}
	}()
	return convert.Convert(vmi, opts)
}

// refusable tells whether a refused field is one of paths or inside one.
func refusable(f string, paths []string) bool {
	for _, p := range paths {
		if f == p || strings.HasPrefix(f, p) && (f[len(p)] == '.' || f[len(p)] == '[') {
			return true
		}
	}
	return false
}

var indexPattern = regexp.MustCompile(`\[\d+\]`)

// normalizePath drops a path's indices: disks[2].serial → disks[*].serial.
func normalizePath(p string) string { return indexPattern.ReplaceAllString(p, "[*]") }

// sortedByCount returns m's keys, most frequent first.
func sortedByCount(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}

// TestDeterministic checks that a Case depends on its seed and index only:
// generated twice, the same YAML and Options; another seed, another VMI.
func TestDeterministic(t *testing.T) {
	for _, cfg := range propertyConfigs {
		for i := range 50 {
			a, b := vmigen.Generate(cfg, i), vmigen.Generate(cfg, i)
			ya, _ := vmigen.YAML(a.VMI)
			yb, _ := vmigen.YAML(b.VMI)
			if !bytes.Equal(ya, yb) || !reflect.DeepEqual(a.Options, b.Options) || !slices.Equal(a.Refusable, b.Refusable) {
				t.Fatalf("%v index %d: two generations differ:\n%s", cfg, i, golden.LineDiff(string(ya), string(yb)))
			}
			other := cfg
			other.Seed = cfg.Seed + 1
			o := vmigen.Generate(other, i)
			o.VMI.Name = a.VMI.Name
			if yo, _ := vmigen.YAML(o.VMI); bytes.Equal(ya, yo) && i > 0 {
				t.Errorf("%v index %d: seeds %d and %d give the same VMI", cfg, i, cfg.Seed, other.Seed)
			}
		}
	}
}

// TestSkip checks that Config.Skip leaves the areas it names out: no
// disks, volumes, interfaces or networks, and still valid VMIs.
func TestSkip(t *testing.T) {
	cfg := vmigen.Config{Seed: 3, Profile: vmigen.KubeVirt, Skip: vmigen.AreaStorage | vmigen.AreaNetwork}
	for _, c := range vmigen.Cases(cfg, 200) {
		s := c.VMI.Spec
		if len(s.Volumes) > 0 || len(s.Domain.Devices.Disks) > 0 || len(s.Domain.Devices.Filesystems) > 0 ||
			len(s.Domain.Devices.Interfaces) > 0 || len(s.Networks) > 0 || s.Domain.Devices.AutoattachPodInterface != nil {
			t.Errorf("%s has storage or network, which the Config skips", c.VMI.Name)
		}
		vmi := c.VMI.DeepCopy()
		api.Default(vmi, api.ClusterConfig{})
		for _, fe := range api.Validate(vmi) {
			if !refusable(fe.Field, c.Refusable) {
				t.Errorf("%s: api.Validate: %v", c.VMI.Name, fe)
			}
		}
	}
}
