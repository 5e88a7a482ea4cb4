package hostplan

import (
	"testing"
	"time"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

// TestMarksRoundTrip: the launcher's element survives being written into a
// domain's metadata and read back, from libvirtxml's form and from the
// form libvirt gives back (its own prefix and whitespace).
func TestMarksRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	m := &Marks{Owner: "node-a", VMI: VMIRef{Namespace: "ns", Name: "x", UID: "u-1", Grace: 30}, Hash: "abc",
		Started:  &Started{At: at, Pending: true},
		Shutdown: &Shutdown{Requested: at, Deadline: at.Add(30 * time.Second)},
		Ended:    &Ended{Phase: v1.Failed, Reason: "Destroyed", At: at.Add(time.Minute)}}
	el, err := m.Element()
	if err != nil {
		t.Fatal(err)
	}
	d := &libvirtxml.Domain{Type: "qemu", Name: "ns_x", Metadata: &libvirtxml.DomainMetadata{XML: el}}
	raw, err := d.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := domain.Unmarshal([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	got, err := MarksOf(back)
	if err != nil || got == nil {
		t.Fatalf("MarksOf: %v, %v\n%s", got, err, raw)
	}
	if got.Owner != m.Owner || got.VMI != m.VMI || got.Hash != m.Hash || !got.Started.At.Equal(at) || !got.Started.Pending ||
		!got.Shutdown.Deadline.Equal(m.Shutdown.Deadline) || *got.Ended != *m.Ended {
		t.Errorf("round trip: %+v, want %+v", got, m)
	}
	libvirtStyle := `<vmi2libvirt:launcher xmlns:vmi2libvirt="` + MetadataNS + `">
    <vmi2libvirt:owner>node-a</vmi2libvirt:owner>
    <vmi2libvirt:vmi namespace="ns" name="x" uid="u-1" grace="30"/>
    <vmi2libvirt:hash>abc</vmi2libvirt:hash>
  </vmi2libvirt:launcher>`
	if got, err := ParseMarks(libvirtStyle); err != nil || got == nil || got.Owner != "node-a" || got.VMI.Grace != 30 || got.Ran() {
		t.Errorf("libvirt's form: %+v, %v", got, err)
	}
	// libvirt's GetMetadata gives the element without its namespace.
	if got, err := ParseMarks("<launcher>\n  <owner>node-a</owner>\n  <vmi namespace=\"ns\" name=\"x\" grace=\"5\"/>\n</launcher>"); err != nil || got == nil || got.Owner != "node-a" || got.VMI.Grace != 5 {
		t.Errorf("GetMetadata's form: %+v, %v", got, err)
	}
	for _, other := range []string{"", `<other xmlns="urn:o"><owner>x</owner></other>`, "not xml"} {
		if got, _ := ParseMarks(other); got != nil {
			t.Errorf("ParseMarks(%q) = %+v, want nil", other, got)
		}
	}
}
