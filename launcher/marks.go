package launcher

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// metadataNS is the XML namespace of the launcher's element in a domain's
// <metadata>, and metadataPrefix the prefix libvirt writes it with.
const (
	metadataNS     = "https://github.com/vmi2libvirt/vmi2libvirt/launcher"
	metadataPrefix = "vmi2libvirt"
)

// marks are what a launcher records in the metadata of each domain it
// defines: everything it needs to decide what to do with the domain after
// a restart, kept where it survives one (libvirt persists a domain's
// metadata with its definition; libvirtd forgets a shut-off domain's
// reason when it restarts, the marks stay):
//
//	<vmi2libvirt:launcher xmlns:vmi2libvirt="https://github.com/vmi2libvirt/vmi2libvirt/launcher">
//	  <owner>node01</owner>
//	  <vmi namespace="default" name="tiny" uid="…" grace="30"/>
//	  <hash>…</hash>                                     SHA-256 of the converted domain's XML
//	  <image field="spec.volumes[0].containerDisk.image" ref="…" digest="sha256:…"/>
//	  <started at="…" pending="true"/>                   set before the first start
//	  <shutdown requested="…" deadline="…"/>             a graceful shutdown is under way
//	  <ended phase="Succeeded" reason="GuestShutdown" at="…"/>
//	</vmi2libvirt:launcher>
//
// A VMI runs at most once: a domain with a started mark is never started
// again. The mark is written, pending, before the start, and confirmed
// after it; a pending mark on a domain that is not running, found by a
// launcher that did not write it, means a launcher died while starting:
// the VMI has ended (Failed), it is not started again.
type marks struct {
	XMLName  xml.Name      `xml:"https://github.com/vmi2libvirt/vmi2libvirt/launcher launcher"`
	Owner    string        `xml:"owner"`
	VMI      vmiIdentity   `xml:"vmi"`
	Hash     string        `xml:"hash"`
	Images   []imageUse    `xml:"image"`
	Started  *startedMark  `xml:"started"`
	Shutdown *shutdownMark `xml:"shutdown"`
	Ended    *endedMark    `xml:"ended"`
}

// vmiIdentity is the VMI a domain runs, and its termination grace period
// in seconds (spec.terminationGracePeriodSeconds, defaulted).
type vmiIdentity struct {
	Namespace string    `xml:"namespace,attr"`
	Name      string    `xml:"name,attr"`
	UID       types.UID `xml:"uid,attr,omitempty"`
	Grace     int64     `xml:"grace,attr"`
}

// startedMark says when the domain was started; Pending while the start
// has not been confirmed.
type startedMark struct {
	At      time.Time `xml:"at,attr"`
	Pending bool      `xml:"pending,attr,omitempty"`
}

// shutdownMark says when a graceful shutdown was asked, and when the
// domain is destroyed if the guest has not powered off by then.
type shutdownMark struct {
	Requested time.Time `xml:"requested,attr"`
	Deadline  time.Time `xml:"deadline,attr"`
}

// endedMark is how the VMI ended, as first observed.
type endedMark struct {
	Phase  v1.VirtualMachineInstancePhase `xml:"phase,attr"`
	Reason string                         `xml:"reason,attr,omitempty"`
	At     time.Time                      `xml:"at,attr"`
}

// key is the VMI's namespace/name.
func (m *marks) key() string { return m.VMI.Namespace + "/" + m.VMI.Name }

// ran tells whether the VMI has been started (or its start was begun).
func (m *marks) ran() bool { return m.Started != nil }

// marshal returns the element as libvirt takes it.
func (m *marks) marshal() (string, error) {
	out, err := xml.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("launcher: marshal domain metadata: %w", err)
	}
	return string(out), nil
}

// parseMarks reads the launcher's element from the XML of a domain's
// metadata (the inner XML of <metadata>, as libvirtxml keeps it, or the
// element alone, as libvirt's GetMetadata returns it). It returns nil when
// there is none.
func parseMarks(metadata string) (*marks, error) {
	dec := xml.NewDecoder(bytes.NewReader([]byte("<m>" + metadata + "</m>")))
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil // no element of ours (or nothing readable)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Space == metadataNS && se.Name.Local == "launcher" {
			m := &marks{}
			if err := dec.DecodeElement(m, &se); err != nil {
				return nil, fmt.Errorf("launcher: domain metadata: %w", err)
			}
			return m, nil
		}
	}
}

// parseMetadataElement reads the launcher's element as libvirt's
// GetMetadata returns it: without its namespace, which the call named.
func parseMetadataElement(el string) (*marks, error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(el), "<launcher")
	if !ok || strings.HasPrefix(rest, " xmlns=") {
		return parseMarks(el)
	}
	return parseMarks(`<launcher xmlns="` + metadataNS + `"` + rest)
}

// marksOf returns the launcher's element of a parsed domain, or nil.
func marksOf(d *libvirtxml.Domain) (*marks, error) {
	if d.Metadata == nil {
		return nil, nil
	}
	return parseMarks(d.Metadata.XML)
}

// setMarks puts m into d's metadata, in place of any element of ours.
func setMarks(d *libvirtxml.Domain, m *marks) error {
	el, err := m.marshal()
	if err != nil {
		return err
	}
	if d.Metadata == nil {
		d.Metadata = &libvirtxml.DomainMetadata{}
	}
	d.Metadata.XML = el
	return nil
}
