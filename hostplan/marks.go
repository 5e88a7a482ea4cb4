package hostplan

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

// MetadataNS is the XML namespace of the launcher's element in a domain's
// <metadata>, and MetadataPrefix the prefix it is written with.
const (
	MetadataNS     = "https://github.com/vmi2libvirt/vmi2libvirt/launcher"
	MetadataPrefix = "vmi2libvirt"
)

// Marks are what a launcher records in the metadata of each domain it
// defines: everything it needs to decide what to do with the domain after
// a restart, kept where it survives one (libvirt persists a domain's
// metadata with its definition; libvirtd forgets a shut-off domain's reason
// when it restarts, the marks stay):
//
//	<vmi2libvirt:launcher xmlns:vmi2libvirt="https://github.com/vmi2libvirt/vmi2libvirt/launcher">
//	  <owner>node01</owner>
//	  <vmi namespace="default" name="tiny" uid="…" grace="30"/>
//	  <hash>…</hash>                                     SHA-256 of the domain's XML without its metadata
//	  <image field="spec.volumes[0].containerDisk.image" ref="…" digest="sha256:…"/>
//	  <started at="…" pending="true"/>                   set before the first start
//	  <shutdown requested="…" deadline="…"/>             a graceful shutdown is under way
//	  <ended phase="Succeeded" reason="GuestShutdown" at="…"/>
//	  <migration role="source" source="node01" target="node02" start="…"/>   see Migration
//	  <spec>{…}</spec>                                   the spec it runs, as JSON
//	  <hotplugged><volume>…</volume></hotplugged>        volumes attached while it runs
//	</vmi2libvirt:launcher>
//
// A plan's marks are the first four: who owns the domain, which VMI it
// runs, what was converted and from which images. The launcher adds the
// others (started, shutdown, ended, migration) as the domain runs. A VMI runs at most once: a domain with a
// started mark is never started again. The mark is written, pending, before
// the start, and confirmed after it; a pending mark on a domain that is not
// running, found by a launcher that did not write it, means a launcher died
// while starting: the VMI has ended (Failed), it is not started again.
// A plan's marks also hold its spec; live changes (hostplan.LiveChanges)
// replace it, with the hash, and add the volumes they attached.
type Marks struct {
	XMLName  xml.Name   `xml:"https://github.com/vmi2libvirt/vmi2libvirt/launcher launcher"`
	Owner    string     `xml:"owner"`
	VMI      VMIRef     `xml:"vmi"`
	Hash     string     `xml:"hash"`
	Images   []ImageUse `xml:"image"`
	Started  *Started   `xml:"started"`
	Shutdown *Shutdown  `xml:"shutdown"`
	Ended    *Ended     `xml:"ended"`
	// Migration is the last live migration of the domain (migration.go).
	Migration *Migration `xml:"migration"`

	// Spec is the VMI's spec the domain runs, as JSON (SpecMark): what a
	// new spec is compared with (LiveChanges). Hotplugged are the hotplug
	// volumes: attached to the running domain (see live.go), or
	// hot-pluggable claims in the spec from the start (Make).
	Spec       string   `xml:"spec,omitempty"`
	Hotplugged []string `xml:"hotplugged>volume,omitempty"`
}

// VMIRef is the VMI a domain runs, and its termination grace period in
// seconds (spec.terminationGracePeriodSeconds, defaulted).
type VMIRef struct {
	Namespace string    `xml:"namespace,attr"`
	Name      string    `xml:"name,attr"`
	UID       types.UID `xml:"uid,attr,omitempty"`
	Grace     int64     `xml:"grace,attr"`
}

// ImageUse is one image a VMI runs from: the field that names it, the
// reference as written and the digest it resolved to when the domain was
// first defined. A VMI keeps its digests for its whole life: a tag that
// moves later does not change the disk under a running guest, and pruning
// keeps every digest a domain records.
type ImageUse struct {
	Field  string `xml:"field,attr"`
	Volume string `xml:"volume,attr,omitempty"` // a containerDisk's volume
	Ref    string `xml:"ref,attr"`
	Digest string `xml:"digest,attr"`
}

// Started says when the domain was started; Pending while the start has
// not been confirmed.
type Started struct {
	At      time.Time `xml:"at,attr"`
	Pending bool      `xml:"pending,attr,omitempty"`
}

// Shutdown says when a graceful shutdown was asked, and when the domain is
// destroyed if the guest has not powered off by then.
type Shutdown struct {
	Requested time.Time `xml:"requested,attr"`
	Deadline  time.Time `xml:"deadline,attr"`
}

// Ended is how the VMI ended, as first observed.
type Ended struct {
	Phase  v1.VirtualMachineInstancePhase `xml:"phase,attr"`
	Reason string                         `xml:"reason,attr,omitempty"`
	At     time.Time                      `xml:"at,attr"`
}

// Key is the VMI's namespace/name.
func (m *Marks) Key() string { return m.VMI.Namespace + "/" + m.VMI.Name }

// Ran tells whether the VMI has been started (or its start was begun).
func (m *Marks) Ran() bool { return m.Started != nil }

// WithRun returns m with the run marks (Started, Shutdown, Ended, Migration) of run,
// which may be nil: what a domain defined again keeps of its run.
func (m Marks) WithRun(run *Marks) Marks {
	m.Started, m.Shutdown, m.Ended, m.Migration = nil, nil, nil, nil
	if run != nil {
		m.Started, m.Shutdown, m.Ended, m.Migration = run.Started, run.Shutdown, run.Ended, run.Migration
	}
	return m
}

// Element returns the marks as the element libvirt stores in the domain's
// metadata.
func (m *Marks) Element() (string, error) {
	out, err := xml.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("hostplan: marshal domain metadata: %w", err)
	}
	return string(out), nil
}

// ParseMarks reads the launcher's element from the XML of a domain's
// metadata: the inner XML of <metadata>, as libvirtxml keeps it, or the
// element alone, as libvirt's GetMetadata returns it (without the namespace
// the call named). It returns nil when there is none.
func ParseMarks(metadata string) (*Marks, error) {
	if rest, ok := strings.CutPrefix(strings.TrimSpace(metadata), "<launcher"); ok && !strings.HasPrefix(rest, " xmlns=") {
		metadata = `<launcher xmlns="` + MetadataNS + `"` + rest
	}
	dec := xml.NewDecoder(bytes.NewReader([]byte("<m>" + metadata + "</m>")))
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil // no element of ours (or nothing readable)
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Space == MetadataNS && se.Name.Local == "launcher" {
			m := &Marks{}
			if err := dec.DecodeElement(m, &se); err != nil {
				return nil, fmt.Errorf("hostplan: domain metadata: %w", err)
			}
			return m, nil
		}
	}
}

// MarksOf returns the launcher's marks of a parsed domain, or nil.
func MarksOf(d *libvirtxml.Domain) (*Marks, error) {
	if d.Metadata == nil {
		return nil, nil
	}
	return ParseMarks(d.Metadata.XML)
}
