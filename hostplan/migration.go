package hostplan

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

// MigrationRole is the side of a live migration a domain is on.
type MigrationRole string

// The two sides of a migration.
const (
	MigrationSource MigrationRole = "source"
	MigrationTarget MigrationRole = "target"
)

// Migration is the mark of a live migration in the metadata of the
// domains on both of its sides: which side this one is, the owners of both,
// when it began and ended, and how (KubeVirt's migrationState records the
// same). A launcher restarted in the middle decides from it and from the
// domain's state (JudgeMigration), so the guest runs exactly once.
type Migration struct {
	UID       types.UID        `xml:"uid,attr,omitempty"`
	Role      MigrationRole    `xml:"role,attr"`
	Source    string           `xml:"source,attr"` // the source's owner
	Target    string           `xml:"target,attr"` // the target's owner
	TargetURI string           `xml:"targetURI,attr,omitempty"`
	Mode      v1.MigrationMode `xml:"mode,attr,omitempty"`
	Start     time.Time        `xml:"start,attr"`
	End       *time.Time       `xml:"end,attr,omitempty"`
	Completed bool             `xml:"completed,attr,omitempty"`
	Failed    bool             `xml:"failed,attr,omitempty"`
	// Abort is the state of an abort asked for (Aborting, then Succeeded
	// or Failed); empty when none was.
	Abort  v1.MigrationAbortStatus `xml:"abort,attr,omitempty"`
	Reason string                  `xml:"reason,attr,omitempty"`
}

// Finished tells whether the migration has ended, either way.
func (m *Migration) Finished() bool { return m != nil && (m.Completed || m.Failed) }

// Finish records the migration's end at now: completed, or failed for
// reason (and an abort asked for as succeeded, since the guest stayed).
func (m *Migration) Finish(now time.Time, failure string) {
	t := now.UTC().Truncate(time.Millisecond)
	m.End = &t
	if failure == "" {
		m.Completed, m.Failed, m.Reason = true, false, ""
		if m.Abort == v1.MigrationAbortInProgress {
			m.Abort = v1.MigrationAbortFailed // too late: it completed
		}
		return
	}
	m.Completed, m.Failed, m.Reason = false, true, failure
	if m.Abort == v1.MigrationAbortInProgress {
		m.Abort = v1.MigrationAbortSucceeded
	}
}

// State is the migration as KubeVirt's status.migrationState reports it.
func (m *Migration) State() *v1.VirtualMachineInstanceMigrationState {
	if m == nil {
		return nil
	}
	s := &v1.VirtualMachineInstanceMigrationState{
		MigrationUID:   m.UID,
		SourceNode:     m.Source,
		TargetNode:     m.Target,
		Mode:           m.Mode,
		StartTimestamp: metaTime(m.Start),
		Completed:      m.Completed,
		Failed:         m.Failed,
		FailureReason:  m.Reason,
		AbortRequested: m.Abort != "",
		AbortStatus:    m.Abort,
	}
	if m.End != nil {
		s.EndTimestamp = metaTime(*m.End)
	}
	return s
}

func metaTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

// MigrationVerdict is what a launcher does with a domain whose marks
// record a migration that has not finished (see JudgeMigration).
type MigrationVerdict int

const (
	// MigrationUnderWay: libvirt still migrates it; wait.
	MigrationUnderWay MigrationVerdict = iota
	// MigrationStayed: the source runs and migrates no more: the
	// migration failed and the guest stays on the source.
	MigrationStayed
	// MigrationLeft: the source domain is shut off as migrated: the guest
	// runs on the target; the source removes its domain and artifacts.
	MigrationLeft
	// MigrationArrived: the target domain runs and no longer receives:
	// the guest runs here.
	MigrationArrived
	// MigrationNeverArrived: the target has no running domain: the guest
	// stayed on the source; the target removes what it prepared.
	MigrationNeverArrived
)

var verdictNames = map[MigrationVerdict]string{
	MigrationUnderWay: "under way", MigrationStayed: "stayed on the source", MigrationLeft: "left for the target",
	MigrationArrived: "arrived on the target", MigrationNeverArrived: "never arrived on the target",
}

func (v MigrationVerdict) String() string { return verdictNames[v] }

// JudgeMigration decides what an unfinished migration m (of the domain's
// marks) has come to from the domain as libvirt shows it now: whether it
// exists, its state and reason, and whether a migration job runs on it.
// It is the one rule both sides restart by.
func JudgeMigration(m *Migration, exists bool, state domain.State, reason domain.Reason, jobActive bool) MigrationVerdict {
	if m.Role == MigrationTarget {
		switch {
		case !exists || !state.Active():
			return MigrationNeverArrived
		case jobActive || (state == domain.StatePaused && reason == domain.PausedMigration):
			return MigrationUnderWay
		}
		return MigrationArrived
	}
	switch {
	case jobActive:
		return MigrationUnderWay
	case exists && state.Active():
		return MigrationStayed
	case exists && state == domain.StateShutoff && reason == domain.ShutoffMigrated:
		return MigrationLeft
	}
	// Shut off for another reason (or gone): it did not leave by a
	// migration; whatever ended it, the guest is not on the target.
	return MigrationStayed
}

// MigratedAway tells whether s is of a source domain that a migration
// shut off: the VMI runs on the target; it has not ended.
func MigratedAway(s Snapshot) bool {
	m := s.Marks
	return m != nil && m.Migration != nil && m.Migration.Role == MigrationSource && !m.Migration.Failed &&
		s.Obs.State == domain.StateShutoff && s.Obs.Reason == domain.ShutoffMigrated
}

// Incoming tells whether s is of a migration's target domain that has not
// arrived: its marks record an unfinished incoming migration and libvirt
// still receives it (paused for the migration). Such a domain that then
// shuts off or goes never ran the guest here: the migration failed, and
// the VMI has not ended.
func Incoming(s Snapshot) bool {
	m := s.Marks
	return m != nil && m.Migration != nil && m.Migration.Role == MigrationTarget && !m.Migration.Finished() &&
		s.Obs.Defined && s.Obs.State == domain.StatePaused && s.Obs.Reason == domain.PausedMigration
}

// MigrationPaths maps each host path of src's domain to the path of dst's
// domain in its place: what a migration rewrites in the source's domain XML
// for the target (state folder, disks, kernel, logs, sockets). src and dst
// are plans of the same VMI for two hosts, so their domains differ in
// paths only; any other difference is an error (the VMI changed between
// them). Paths that are the same on both sides are left out.
func MigrationPaths(src, dst *Plan) (map[string]string, error) {
	a, b := xml.NewDecoder(bytes.NewReader(src.XML)), xml.NewDecoder(bytes.NewReader(dst.XML))
	paths := map[string]string{}
	add := func(x, y string) error {
		if x == y {
			return nil
		}
		if !strings.HasPrefix(x, "/") || !strings.HasPrefix(y, "/") {
			return fmt.Errorf("hostplan: the plans differ in %q and %q, not in a path", x, y)
		}
		if old, ok := paths[x]; ok && old != y {
			return fmt.Errorf("hostplan: path %s maps to both %s and %s", x, old, y)
		}
		paths[x] = y
		return nil
	}
	inMetadata := 0
	for {
		ta, errA := a.RawToken()
		tb, errB := b.RawToken()
		if errA == io.EOF && errB == io.EOF {
			return paths, nil
		}
		if errA != nil || errB != nil {
			return nil, fmt.Errorf("hostplan: the plans' domains differ in shape (%v, %v)", errA, errB)
		}
		switch x := ta.(type) {
		case xml.StartElement:
			y, ok := tb.(xml.StartElement)
			if !ok || x.Name != y.Name || len(x.Attr) != len(y.Attr) {
				return nil, fmt.Errorf("hostplan: the plans' domains differ at <%s>", x.Name.Local)
			}
			if x.Name.Local == "metadata" {
				inMetadata++
			}
			if inMetadata > 0 {
				continue
			}
			for i := range x.Attr {
				if x.Attr[i].Name != y.Attr[i].Name {
					return nil, fmt.Errorf("hostplan: the plans' domains differ at <%s %s>", x.Name.Local, x.Attr[i].Name.Local)
				}
				if err := add(x.Attr[i].Value, y.Attr[i].Value); err != nil {
					return nil, err
				}
			}
		case xml.EndElement:
			if x.Name.Local == "metadata" {
				inMetadata--
			}
		case xml.CharData:
			y, ok := tb.(xml.CharData)
			if !ok {
				return nil, errors.New("hostplan: the plans' domains differ in shape")
			}
			if inMetadata > 0 {
				continue
			}
			if err := add(strings.TrimSpace(string(x)), strings.TrimSpace(string(y))); err != nil {
				return nil, err
			}
		}
	}
}

// MigrationXML returns the domain XML of a migration's target: live, the
// source domain's XML as libvirt gives it for a migration (migratable:
// with the addresses, MAC addresses and aliases the guest sees), with
// every path of paths (MigrationPaths) replaced by the target's, and the
// launcher's element of its metadata replaced by marks (the target's).
// The same rewrite of the source's persistent XML gives the target's
// persistent definition.
func MigrationXML(live []byte, paths map[string]string, marks Marks) ([]byte, error) {
	el, err := marks.Element()
	if err != nil {
		return nil, err
	}
	s := string(live)
	open := strings.Index(s, "<metadata>")
	end := strings.Index(s, "</metadata>")
	if open < 0 || end < open {
		return nil, errors.New("hostplan: the source domain has no metadata: not a launcher's domain")
	}
	s = s[:open] + "<metadata>" + el + s[end:]
	// Longest first, so that a path is never replaced inside a longer one.
	keys := make([]string, 0, len(paths))
	for k := range paths {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	pairs := make([]string, 0, 6*len(keys))
	for _, k := range keys {
		from, to := escape(k), escape(paths[k])
		pairs = append(pairs, "'"+from+"'", "'"+to+"'", `"`+from+`"`, `"`+to+`"`, ">"+from+"<", ">"+to+"<")
	}
	return []byte(strings.NewReplacer(pairs...).Replace(s)), nil
}

func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// CopiedDisks lists the target names of the disks of d (the source's live
// domain) whose files a migration copies (NON_SHARED_INC): the writable
// file disks that paths moves — the state folder's overlays and empty
// disks, which the target made beforehand over the same backing files. A
// writable file disk that stays at its path is shared by both sides:
// shared says whether there is one.
func CopiedDisks(d *libvirtxml.Domain, paths map[string]string) (copied []string, shared bool) {
	if d.Devices == nil {
		return nil, false
	}
	for _, disk := range d.Devices.Disks {
		if disk.ReadOnly != nil || disk.Source == nil || disk.Source.File == nil || disk.Target == nil {
			continue
		}
		if _, moves := paths[disk.Source.File.File]; moves {
			copied = append(copied, disk.Target.Dev)
		} else {
			shared = true
		}
	}
	return copied, shared
}
