package domain

import (
	"strings"
	"testing"

	"libvirt.org/go/libvirtxml"
)

// libvirt's schema (domaincommon.rng in libvirt 9.0) requires the slots
// attribute of <maxMemory>; libvirtxml drops a zero value.
func TestMarshalWritesZeroMaxMemorySlots(t *testing.T) {
	for _, tc := range []struct {
		slots uint
		want  string
	}{
		{0, `<maxMemory unit="b" slots="0">4294967296</maxMemory>`},
		{4, `<maxMemory unit="b" slots="4">4294967296</maxMemory>`},
	} {
		d := &libvirtxml.Domain{
			Type:          "kvm",
			Name:          "default_x",
			Metadata:      &libvirtxml.DomainMetadata{XML: "<maxMemory>not this one</maxMemory>"},
			MaximumMemory: &libvirtxml.DomainMaxMemory{Value: 4294967296, Unit: "b", Slots: tc.slots},
		}
		out, err := Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("slots %d: want %s in\n%s", tc.slots, tc.want, out)
		}
		if !strings.Contains(string(out), "<maxMemory>not this one</maxMemory>") {
			t.Errorf("metadata changed:\n%s", out)
		}
		back, err := Unmarshal(out)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Marshal(back)
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(out) {
			t.Errorf("round trip changed the XML:\n%s\n%s", out, again)
		}
	}
}
