package domain_test

import (
	"bytes"
	"testing"

	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/golden"
)

// metadataSamples are inner XML a domain's <metadata> may hold: empty, one
// element, the launcher's marks, several elements over several lines.
var metadataSamples = []string{
	"",
	"<a/>",
	`<vmi2libvirt:launcher xmlns:vmi2libvirt="https://github.com/vmi2libvirt/vmi2libvirt/launcher"><owner>node01</owner><vmi namespace="default" name="tiny" grace="30"></vmi><hash>0123</hash></vmi2libvirt:launcher>`,
	"<x:a xmlns:x=\"urn:x\">1 &lt; 2</x:a>\n<y:b xmlns:y=\"urn:y\"/>",
}

// TestWithMetadata: WithMetadata of a converted domain's XML gives the
// bytes libvirtxml writes for that domain with the metadata set, whether
// the XML had no <metadata> or another one, and WithoutMetadata takes it
// out again; on every golden case and sample, with and without a uuid.
func TestWithMetadata(t *testing.T) {
	for _, c := range converterCases(t) {
		for _, uuid := range []bool{true, false} {
			d := convertCase(t, c)
			if !uuid {
				d.UUID = ""
			}
			bare, err := domain.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			prev := bare
			for _, inner := range metadataSamples {
				d.Metadata = &libvirtxml.DomainMetadata{XML: inner}
				want, err := domain.LibvirtxmlMarshal(d)
				if err != nil {
					t.Fatal(err)
				}
				for from, doc := range map[string][]byte{"without metadata": bare, "with other metadata": prev} {
					got, err := domain.WithMetadata(doc, inner)
					if err != nil {
						t.Fatalf("%s: %v", c.name, err)
					}
					if !bytes.Equal(got, want) {
						t.Errorf("%s (uuid %t, %s): WithMetadata(%q) differs from libvirtxml:\n%s", c.name, uuid, from, inner, golden.LineDiff(string(want), string(got)))
					}
				}
				without, err := domain.WithoutMetadata(want)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(without, bare) {
					t.Errorf("%s (uuid %t): WithoutMetadata of the domain with %q is not its XML without metadata:\n%s", c.name, uuid, inner, golden.LineDiff(string(bare), string(without)))
				}
				prev = want
			}
			d.Metadata = nil
		}
	}
}

// TestWithMetadataRefusesOtherXML: what is not a domain's canonical XML is
// an error, not a guess.
func TestWithMetadataRefusesOtherXML(t *testing.T) {
	for _, doc := range []string{"", "<network>\n</network>\n", "<domain type=\"kvm\">", "<domain>\n  <metadata><a/>\n"} {
		if _, err := domain.WithMetadata([]byte(doc), "<a/>"); err == nil {
			t.Errorf("WithMetadata(%q): no error", doc)
		}
	}
}
