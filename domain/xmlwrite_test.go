package domain_test

import (
	"bytes"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/internal/fixtures"
	"github.com/vmi2libvirt/vmi2libvirt/internal/pipeline"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/golden"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
)

// converterCase is a VMI document with the options it converts with: a
// golden case of convert/testdata or a sample of examples/vmis.
type converterCase struct {
	name    string
	data    []byte
	opts    convert.Options
	cluster api.ClusterConfig
}

// converterCases returns every golden case that converts and every sample.
func converterCases(tb testing.TB) []converterCase {
	tb.Helper()
	var cases []converterCase
	dirs, err := filepath.Glob("../convert/testdata/*/domain.xml")
	if err != nil || len(dirs) == 0 {
		tb.Fatalf("no golden domains under ../convert/testdata (%v)", err)
	}
	for _, f := range dirs {
		dir := filepath.Dir(f)
		data, err := os.ReadFile(filepath.Join(dir, "vmi.yaml"))
		if err != nil {
			tb.Fatal(err)
		}
		opts, cluster, err := fixtures.LoadOptions(filepath.Join(dir, "options.yaml"))
		if err != nil {
			tb.Fatal(err)
		}
		cases = append(cases, converterCase{filepath.Base(dir), data, opts, cluster})
	}
	samples, _ := filepath.Glob("../examples/vmis/*.yaml")
	for _, f := range samples {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		cases = append(cases, converterCase{"examples/" + filepath.Base(f), data, convert.KubeVirtOptions(), api.ClusterConfig{}})
	}
	return cases
}

// convertCase runs the pipeline up to the domain.
func convertCase(tb testing.TB, c converterCase) *libvirtxml.Domain {
	tb.Helper()
	res, err := pipeline.Convert(c.data, c.cluster, c.opts)
	if err != nil {
		tb.Fatalf("%s: %v", c.name, err)
	}
	return res.Domain
}

// TestWriterConvertedDomains: every domain the converter makes from the
// golden cases and the samples is written by the writer itself (no
// fallback to libvirtxml) and byte for byte as libvirtxml writes it.
func TestWriterConvertedDomains(t *testing.T) {
	for _, c := range converterCases(t) {
		d := convertCase(t, c)
		got, ok := domain.WriteDomain(d, nil)
		if !ok {
			t.Errorf("%s: the writer leaves the converted domain to libvirtxml", c.name)
			continue
		}
		want, err := domain.LibvirtxmlMarshal(d)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got = append(got, '\n'); !bytes.Equal(got, want) {
			t.Errorf("%s: the writer differs from libvirtxml:\n%s", c.name, golden.LineDiff(string(want), string(got)))
		}
	}
}

// TestWriterFallsBack: a domain with a field the writer does not write
// (raw metadata, a spice display, a TCP serial port) goes to libvirtxml.
func TestWriterFallsBack(t *testing.T) {
	for name, set := range map[string]func(*libvirtxml.Domain){
		"metadata": func(d *libvirtxml.Domain) { d.Metadata = &libvirtxml.DomainMetadata{XML: "<a/>"} },
		"spice": func(d *libvirtxml.Domain) {
			d.Devices.Graphics = append(d.Devices.Graphics, libvirtxml.DomainGraphic{Spice: &libvirtxml.DomainGraphicSpice{}})
		},
		"sev-snp": func(d *libvirtxml.Domain) {
			d.LaunchSecurity = &libvirtxml.DomainLaunchSecurity{SEVSNP: &libvirtxml.DomainLaunchSecuritySEVSNP{}}
		},
		"tcp serial": func(d *libvirtxml.Domain) {
			d.Devices.Serials = append(d.Devices.Serials, libvirtxml.DomainSerial{
				Source: &libvirtxml.DomainChardevSource{TCP: &libvirtxml.DomainChardevSourceTCP{Host: "h"}},
			})
		},
	} {
		d := sample()
		set(d)
		if _, ok := domain.WriteDomain(d, nil); ok {
			t.Errorf("%s: the writer wrote a domain it cannot write", name)
		}
		got, err := domain.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := domain.LibvirtxmlMarshal(d)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: Marshal differs from libvirtxml", name)
		}
	}
}

// FuzzWriter converts one of the golden cases or samples (chosen by pick),
// sets fields of the domain at random (driven by ops, see mutate), and
// checks that the writer either leaves the domain to libvirtxml or writes
// exactly libvirtxml's bytes. The seed corpus under testdata/fuzz/FuzzWriter
// runs with go test.
func FuzzWriter(f *testing.F) {
	cases := converterCases(f)
	for i := range cases {
		f.Add(uint16(i), []byte{})
	}
	f.Add(uint16(0), []byte("\x03\x01\x05a<b>&\"c'\n"))
	f.Fuzz(func(t *testing.T, pick uint16, ops []byte) {
		c := cases[int(pick)%len(cases)]
		d := convertCase(t, c)
		mutate(reflect.ValueOf(d).Elem(), ops)
		got, ok := domain.WriteDomain(d, nil)
		want, err := domain.LibvirtxmlMarshal(d)
		if err != nil {
			if ok {
				t.Fatalf("libvirtxml refuses the domain (%v) but the writer wrote it", err)
			}
			return
		}
		if !ok {
			return
		}
		if got = append(got, '\n'); !bytes.Equal(got, want) {
			t.Fatalf("the writer differs from libvirtxml:\n%s", golden.LineDiff(string(want), string(got)))
		}
	})
}

// strs are the strings mutate sets: empty, plain, with every character XML
// escapes, with bytes that are not UTF-8 and runes outside XML.
var strs = []string{"", "a", "x86_64", "<&>\"'", "\t\n\r", "\xff\xfe", "\x00\x1f", "\ufffd\uffff", "é€𝄞", "0x1f"}

// nums are the numbers mutate sets.
var nums = []uint64{0, 1, 2, 7, 16, 255, 4096, math.MaxUint32, math.MaxUint64}

// mutate sets fields of the value v (a struct) as ops says: each step takes
// bytes to walk down to a field (allocating pointers and growing lists on
// the way) and sets it to a value from strs or nums, or to its zero value.
func mutate(v reflect.Value, ops []byte) {
	next := func() int {
		if len(ops) == 0 {
			return -1
		}
		b := ops[0]
		ops = ops[1:]
		return int(b)
	}
	for len(ops) > 0 {
		cur := v
		for steps := 0; steps < 64; steps++ {
			b := next()
			if b < 0 {
				return
			}
			if b == 0xff { // clear the field reached
				cur.SetZero()
				break
			}
			switch cur.Kind() {
			case reflect.Pointer:
				if cur.IsNil() {
					cur.Set(reflect.New(cur.Type().Elem()))
				}
				cur = cur.Elem()
				continue
			case reflect.Struct:
				if cur.NumField() == 0 {
					break
				}
				f := cur.Field(b % cur.NumField())
				if !f.CanSet() {
					break
				}
				cur = f
				continue
			case reflect.Slice:
				if b%4 == 0 || cur.Len() == 0 {
					cur.Set(reflect.Append(cur, reflect.New(cur.Type().Elem()).Elem()))
				}
				cur = cur.Index(b % cur.Len())
				continue
			case reflect.String:
				cur.SetString(strs[b%len(strs)])
			case reflect.Bool:
				cur.SetBool(b%2 == 1)
			case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
				n := int64(nums[b%len(nums)])
				if b&0x80 != 0 {
					n = -n
				}
				if !cur.OverflowInt(n) {
					cur.SetInt(n)
				}
			case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
				if n := nums[b%len(nums)]; !cur.OverflowUint(n) {
					cur.SetUint(n)
				}
			case reflect.Float32, reflect.Float64:
				cur.SetFloat(float64(nums[b%len(nums)]) / 3)
			}
			break
		}
	}
}

// TestWriterIsGenerated: xmlwrite_gen.go is what internal/xmlgen makes of
// the libvirtxml version in go.mod.
func TestWriterIsGenerated(t *testing.T) {
	want, err := os.ReadFile("xmlwrite_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	hosttest.Tools(t, "go")
	out := filepath.Join(t.TempDir(), "gen.go")
	cmd := exec.Command("go", "run", "./internal/xmlgen", "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go run ./internal/xmlgen: %v\n%s", err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("xmlwrite_gen.go is out of date: run go generate ./domain\n%s",
			golden.LineDiff(string(want), string(got)))
	}
}
