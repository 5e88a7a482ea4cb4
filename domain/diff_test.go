package domain_test

import (
	"fmt"
	"strings"
	"testing"

	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

// roundTrip marshals d and unmarshals the XML, failing the test on an
// error; it returns both.
func roundTrip(t *testing.T, d *libvirtxml.Domain) ([]byte, *libvirtxml.Domain) {
	t.Helper()
	xml, err := domain.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := domain.Unmarshal(xml)
	if err != nil {
		t.Fatal(err)
	}
	return xml, parsed
}

// TestDiffEqual checks that equal domains have no diff, including a domain
// and its own marshal+unmarshal (which sets XMLName) and nil vs empty lists.
func TestDiffEqual(t *testing.T) {
	d := sample()
	_, parsed := roundTrip(t, d)
	if parsed.XMLName.Local != "domain" {
		t.Fatalf("Unmarshal should set XMLName, got %q", parsed.XMLName.Local)
	}
	for name, pair := range map[string][2]*libvirtxml.Domain{
		"same":        {d, d},
		"copy":        {sample(), sample()},
		"parsed":      {d, parsed},
		"nil-nil":     {nil, nil},
		"empty lists": {{Devices: &libvirtxml.DomainDeviceList{}}, {Devices: &libvirtxml.DomainDeviceList{Disks: []libvirtxml.DomainDisk{}}}},
	} {
		if diff := domain.Diff(pair[0], pair[1]); diff != "" {
			t.Errorf("%s: want no diff, got:\n%s", name, diff)
		}
	}
}

// TestDiffIgnoresUnmarshalFill: libvirtxml's Unmarshal gives a USB
// controller and a tablet empty USB options and source structs that a
// domain built in Go leaves nil; both marshal to the same XML, so Diff
// finds them equal.
func TestDiffIgnoresUnmarshalFill(t *testing.T) {
	built := &libvirtxml.Domain{Type: "kvm", Name: "fill", Devices: &libvirtxml.DomainDeviceList{
		Controllers: []libvirtxml.DomainController{{Type: "usb", Model: "none"}, {Type: "virtio-serial"}},
		Inputs:      []libvirtxml.DomainInput{{Type: "tablet", Bus: "usb"}},
	}}
	_, parsed := roundTrip(t, built)
	if c := parsed.Devices.Controllers; c[0].USB == nil || c[1].VirtIOSerial == nil || parsed.Devices.Inputs[0].Source == nil {
		t.Fatalf("libvirtxml no longer fills in empty structs (the test has nothing to check): %+v", parsed.Devices)
	}
	if d := domain.Diff(built, parsed); d != "" {
		t.Errorf("want no diff, got:\n%s", d)
	}
	parsed.Devices.Controllers[0].Model = "qemu-xhci"
	if d := domain.Diff(built, parsed); !strings.Contains(d, "qemu-xhci") {
		t.Errorf("a real change next to the filled structs is not reported:\n%s", d)
	}
}

// TestDiffFinds checks that each kind of difference shows up, under the
// path of the field that differs.
func TestDiffFinds(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*libvirtxml.Domain)
		path   string // a fragment of the diff that names the field
	}{
		{"attribute", func(d *libvirtxml.Domain) { d.Type = "qemu" }, `Type: "qemu"`},
		{"nested value", func(d *libvirtxml.Domain) { d.Memory.Value = 1 }, "Value: 1"},
		{"list element", func(d *libvirtxml.Domain) { d.Devices.Disks[0].Target.Bus = "sata" }, `Bus: "sata"`},
		{"element removed", func(d *libvirtxml.Domain) { d.Features.ACPI = nil }, "ACPI"},
		{"element added", func(d *libvirtxml.Domain) { d.Features.APIC = &libvirtxml.DomainFeatureAPIC{} }, "APIC"},
		{"list grown", func(d *libvirtxml.Domain) {
			d.Devices.Disks = append(d.Devices.Disks, libvirtxml.DomainDisk{Device: "cdrom"})
		}, `Device: "cdrom"`},
		{"pointer value", func(d *libvirtxml.Domain) { *d.Devices.MemBalloon.Address.PCI.Bus = 7 }, "7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, got := sample(), sample()
			tc.change(got)
			diff := domain.Diff(want, got)
			if diff == "" {
				t.Fatal("want a diff, got none")
			}
			// go-cmp aligns values in columns: compare with single spaces.
			if !strings.Contains(strings.Join(strings.Fields(diff), " "), tc.path) {
				t.Errorf("diff does not mention %q:\n%s", tc.path, diff)
			}
			if domain.Diff(want, want) != "" {
				t.Error("the change leaked into want")
			}
		})
	}
	if domain.Diff(nil, sample()) == "" || domain.Diff(sample(), nil) == "" {
		t.Error("nil and a domain must differ")
	}
}

// ExampleDiff compares two domains by meaning: the spelling of the XML does
// not count, the values do.
func ExampleDiff() {
	want, _ := domain.Unmarshal([]byte(`<domain type="kvm"><name>default_vm</name><vcpu>2</vcpu></domain>`))
	got, _ := domain.Unmarshal([]byte(`<domain type='kvm'>
  <vcpu>2</vcpu>
  <name>default_vm</name>
</domain>`))
	fmt.Printf("reordered: %q\n", domain.Diff(want, got))

	got.VCPU.Value = 4
	fmt.Println("changed:", domain.Diff(want, got) != "")
	// Output:
	// reordered: ""
	// changed: true
}
