package domain_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/golden"
)

// sample is a small domain with attributes, nested elements, optional
// pointers and lists: enough to exercise libvirtxml's marshalling. It spells
// out what libvirtxml would otherwise default on marshal (the pty source of
// the serial port and console), so that it survives a round trip unchanged.
func sample() *libvirtxml.Domain {
	one, zero := uint(1), uint(0)
	return &libvirtxml.Domain{
		Type: "kvm",
		Name: "default_sample",
		UUID: "5a9fc181-957e-5c32-9e5a-2de5e9673531",
		Memory: &libvirtxml.DomainMemory{
			Value: 134217728,
			Unit:  "b",
		},
		VCPU: &libvirtxml.DomainVCPU{Placement: "static", Value: 1},
		OS: &libvirtxml.DomainOS{
			Type: &libvirtxml.DomainOSType{Arch: "x86_64", Machine: "q35", Type: "hvm"},
		},
		Features: &libvirtxml.DomainFeatureList{ACPI: &libvirtxml.DomainFeature{}},
		Devices: &libvirtxml.DomainDeviceList{
			Disks: []libvirtxml.DomainDisk{{
				Device: "disk",
				Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "qcow2"},
				Source: &libvirtxml.DomainDiskSource{
					File: &libvirtxml.DomainDiskSourceFile{File: "/var/run/kubevirt-ephemeral-disks/disk-data/containerdisk/disk.qcow2"},
				},
				Target: &libvirtxml.DomainDiskTarget{Dev: "vda", Bus: "virtio"},
				Alias:  &libvirtxml.DomainAlias{Name: "ua-containerdisk"},
				Boot:   &libvirtxml.DomainDeviceBoot{Order: 1},
			}},
			Serials: []libvirtxml.DomainSerial{{
				Source: &libvirtxml.DomainChardevSource{Pty: &libvirtxml.DomainChardevSourcePty{}},
				Target: &libvirtxml.DomainSerialTarget{Port: &zero},
			}},
			Consoles: []libvirtxml.DomainConsole{{
				Source: &libvirtxml.DomainChardevSource{Pty: &libvirtxml.DomainChardevSourcePty{}},
				Target: &libvirtxml.DomainConsoleTarget{Type: "serial", Port: &zero},
			}},
			MemBalloon: &libvirtxml.DomainMemBalloon{
				Model: "virtio-non-transitional",
				Stats: &libvirtxml.DomainMemBalloonStats{Period: 10},
				Address: &libvirtxml.DomainAddress{PCI: &libvirtxml.DomainAddressPCI{
					Bus: &one,
				}},
			},
		},
	}
}

// TestMarshalTrailingNewline checks the canonical form: libvirtxml's
// indented XML, one element per line, ending in exactly one newline.
func TestMarshalTrailingNewline(t *testing.T) {
	xml, err := domain.Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasSuffix(xml, []byte("</domain>\n")) || bytes.HasSuffix(xml, []byte("\n\n")) {
		t.Errorf("want exactly one trailing newline after </domain>, got %q", xml[max(0, len(xml)-20):])
	}
	if !bytes.HasPrefix(xml, []byte(`<domain type="kvm">`+"\n  <name>default_sample</name>\n")) {
		t.Errorf("want the indented form, got:\n%s", xml)
	}
}

// TestRoundTrip checks that Unmarshal keeps everything Marshal writes:
// unmarshal then marshal gives the same bytes, and the same domain.
func TestRoundTrip(t *testing.T) {
	want := sample()
	xml, got := roundTrip(t, want)
	if d := domain.Diff(want, got); d != "" {
		t.Errorf("Unmarshal(Marshal(d)) differs from d (-want +got):\n%s", d)
	}
	again, err := domain.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, xml) {
		t.Errorf("Marshal(Unmarshal(xml)) != xml:\n%s\n---\n%s", xml, again)
	}
}

// TestSampleValidates checks the sample domain against libvirt's schema, so
// that the round-trip tests above run on a domain libvirt would accept.
func TestSampleValidates(t *testing.T) {
	xml, err := domain.Marshal(sample())
	if err != nil {
		t.Fatal(err)
	}
	golden.CheckSchemaBytes(t, "sample", xml)
}

// TestMaxMemorySlots checks Marshal's one fix to libvirtxml: a <maxMemory>
// without slots gets slots="0" (libvirt's schema requires the attribute,
// libvirtxml leaves a zero out), other slot counts stay as they are, and the
// result survives a round trip and passes the schema.
func TestMaxMemorySlots(t *testing.T) {
	for _, tc := range []struct {
		slots uint
		want  string
	}{
		{0, `<maxMemory unit="b" slots="0">536870912</maxMemory>`},
		{4, `<maxMemory unit="b" slots="4">536870912</maxMemory>`},
	} {
		d := sample()
		d.MaximumMemory = &libvirtxml.DomainMaxMemory{Value: 536870912, Unit: "b", Slots: tc.slots}
		xml, err := domain.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if got := bytes.Count(xml, []byte("slots=")); got != 1 || !bytes.Contains(xml, []byte("\n  "+tc.want+"\n")) {
			t.Errorf("slots %d: want one line %s, got:\n%s", tc.slots, tc.want, xml)
		}
		golden.CheckRoundTrip(t, xml)
		golden.CheckSchemaBytes(t, fmt.Sprintf("slots-%d", tc.slots), xml)
	}
	// No <maxMemory>: nothing added, even where a metadata text mentions it.
	d := sample()
	d.Description = `<maxMemory unit="b">1</maxMemory>`
	xml, err := domain.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(xml, []byte("slots=")) {
		t.Errorf("slots added to a domain without <maxMemory>:\n%s", xml)
	}
}

// TestUnmarshalCanonicalises checks that XML spelt differently (attribute
// order, quotes, whitespace, no trailing newline) comes back in the
// canonical form.
func TestUnmarshalCanonicalises(t *testing.T) {
	in := "<domain   type='qemu'><name>x</name>\n\n<memory unit='KiB'>1024</memory></domain>"
	d, err := domain.Unmarshal([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	got, err := domain.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	want := `<domain type="qemu">
  <name>x</name>
  <memory unit="KiB">1024</memory>
</domain>
`
	if string(got) != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestUnmarshalErrors checks that malformed XML is an error, not an empty
// domain.
func TestUnmarshalErrors(t *testing.T) {
	for _, in := range []string{
		"",
		"<domain type='kvm'><name>x</name>",      // unterminated
		"<domain><name>x</nom></domain>",         // mismatched tag
		"<domain><memory>lots</memory></domain>", // not a number
		"<domain><vcpu>-1</vcpu></domain>",       // not an unsigned number
		"not xml at all",
	} {
		if d, err := domain.Unmarshal([]byte(in)); err == nil {
			t.Errorf("Unmarshal(%q) = %+v, want an error", in, d)
		}
	}
}

// ExampleMarshal shows the canonical XML of a small domain.
func ExampleMarshal() {
	d := &libvirtxml.Domain{
		Type:   "qemu",
		Name:   "default_tiny",
		Memory: &libvirtxml.DomainMemory{Value: 256, Unit: "MiB"},
		VCPU:   &libvirtxml.DomainVCPU{Value: 2},
	}
	xml, err := domain.Marshal(d)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(xml))
	// Output:
	// <domain type="qemu">
	//   <name>default_tiny</name>
	//   <memory unit="MiB">256</memory>
	//   <vcpu>2</vcpu>
	// </domain>
}

// ExampleUnmarshal reads a domain and looks at one of its fields.
func ExampleUnmarshal() {
	d, err := domain.Unmarshal([]byte(`<domain type="kvm"><name>default_vm</name>
  <os><type arch="x86_64" machine="q35">hvm</type></os></domain>`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(d.Name, d.OS.Type.Machine, strings.ToUpper(d.OS.Type.Type))
	// Output:
	// default_vm q35 HVM
}
