package hostplan

import (
	"strings"
	"testing"
	"time"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

// migrationPlans are webVMI's plans on node01 (/srv) and on node02
// (/data), with the same image digests in node02's store.
func migrationPlans(t *testing.T) (src, dst *Plan) {
	t.Helper()
	vmi := decodeVMI(t, webVMI)
	srcHost := testHost()
	dstHost := testHost()
	dstHost.Owner = "node02"
	dstHost.Options.Layout = convert.HostLayout{StateDir: "/data/vmis", ImageStore: "/data/images"}
	plan := func(h Host, in Inputs) *Plan {
		req, err := Prepare(vmi, h)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Make(req, h, in)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	in := webInputs()
	dstIn := webInputs()
	for f, img := range dstIn.Images {
		img.Dir = strings.Replace(img.Dir, "/srv/", "/data/", 1)
		dstIn.Images[f] = img
	}
	return plan(srcHost, in), plan(dstHost, dstIn)
}

// TestMigrationPaths: the two plans differ in their paths only, each of
// which maps to the target's; plans of different VMIs are refused.
func TestMigrationPaths(t *testing.T) {
	src, dst := migrationPlans(t)
	paths, err := MigrationPaths(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no paths differ")
	}
	for from, to := range paths {
		if !strings.HasPrefix(from, "/srv/") || !strings.HasPrefix(to, "/data/") || strings.TrimPrefix(from, "/srv/") != strings.TrimPrefix(to, "/data/") {
			t.Errorf("path %s -> %s, want /srv/X -> /data/X", from, to)
		}
	}
	state := src.StateFolder + "/"
	var overlay, kernel bool
	for from := range paths {
		overlay = overlay || strings.HasPrefix(from, state) && strings.HasSuffix(from, ".qcow2")
		kernel = kernel || strings.Contains(from, "/sha256/4e4e/")
	}
	if !overlay || !kernel {
		t.Errorf("paths %v lack the overlay (%v) or the kernel (%v)", paths, overlay, kernel)
	}

	other := decodeVMI(t, strings.Replace(webVMI, "memory: 128Mi", "memory: 256Mi", 1))
	req, _ := Prepare(other, testHost())
	p, err := Make(req, testHost(), webInputs())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := MigrationPaths(p, dst); err == nil {
		t.Error("plans of VMIs with different memory: no error")
	}
}

// TestMigrationXML: the target's XML is the source's live XML with the
// target's paths and marks, nothing else changed; CopiedDisks names the
// writable disks that move (all four of the state folder), and none when
// both sides share the state folder.
func TestMigrationXML(t *testing.T) {
	src, dst := migrationPlans(t)
	paths, err := MigrationPaths(src, dst)
	if err != nil {
		t.Fatal(err)
	}
	// libvirt's own format: single quotes, an id, addresses.
	live := strings.ReplaceAll(string(src.XML), `"`, `'`)
	live = strings.Replace(live, "<domain ", "<domain id='7' ", 1)
	m := dst.Marks.WithRun(&Marks{Started: &Started{At: time.Unix(100, 0).UTC()},
		Migration: &Migration{Role: MigrationTarget, Source: "node01", Target: "node02", Start: time.Unix(200, 0).UTC()}})
	out, err := MigrationXML([]byte(live), paths, m)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "/srv/") {
		t.Errorf("the target's XML keeps a source path:\n%s", out)
	}
	d, err := domain.Unmarshal(out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got, err := MarksOf(d)
	if err != nil || got == nil || got.Owner != "node02" || got.Migration == nil || got.Migration.Role != MigrationTarget || got.Started == nil {
		t.Fatalf("marks of the target's XML: %+v (%v)", got, err)
	}
	// Put the paths back: the source's XML again, but for its metadata.
	back := map[string]string{}
	for k, v := range paths {
		back[v] = k
	}
	again, err := MigrationXML(out, back, src.Marks)
	if err != nil {
		t.Fatal(err)
	}
	srcEl, _ := src.Marks.Element()
	if want := strings.Replace(live, strings.ReplaceAll(srcEl, `"`, `'`), srcEl, 1); string(again) != want {
		t.Errorf("rewritten back:\n%s\nwant\n%s", again, want)
	}

	sd, _ := domain.Unmarshal(src.XML)
	copied, shared := CopiedDisks(sd, paths)
	if strings.Join(copied, " ") != "vda vdb vdc vdd" || shared {
		t.Errorf("CopiedDisks = %v, shared %v; want vda vdb vdc vdd (overlay, empty disk, the config ISOs as disks), none shared", copied, shared)
	}
	copied, shared = CopiedDisks(sd, map[string]string{})
	if len(copied) != 0 || !shared {
		t.Errorf("CopiedDisks with one state folder for both = %v, shared %v; want none, shared", copied, shared)
	}
}

// TestJudgeMigration: the rule a restarted launcher follows, on each side.
func TestJudgeMigration(t *testing.T) {
	src := &Migration{Role: MigrationSource}
	dst := &Migration{Role: MigrationTarget}
	for _, c := range []struct {
		m      *Migration
		exists bool
		state  domain.State
		reason domain.Reason
		job    bool
		want   MigrationVerdict
	}{
		{src, true, domain.StateRunning, 0, true, MigrationUnderWay},
		{src, true, domain.StateRunning, 0, false, MigrationStayed},
		{src, true, domain.StatePaused, domain.PausedMigration, false, MigrationStayed},
		{src, true, domain.StateShutoff, domain.ShutoffMigrated, false, MigrationLeft},
		{src, true, domain.StateShutoff, domain.ShutoffDestroyed, false, MigrationStayed},
		{dst, false, 0, 0, false, MigrationNeverArrived},
		{dst, true, domain.StatePaused, domain.PausedMigration, false, MigrationUnderWay},
		{dst, true, domain.StateRunning, 0, true, MigrationUnderWay},
		{dst, true, domain.StateRunning, 0, false, MigrationArrived},
		{dst, true, domain.StateShutoff, 0, false, MigrationNeverArrived},
	} {
		if got := JudgeMigration(c.m, c.exists, c.state, c.reason, c.job); got != c.want {
			t.Errorf("%s side, exists %v, state %d reason %d, job %v: %s, want %s", c.m.Role, c.exists, c.state, c.reason, c.job, got, c.want)
		}
	}
}

// TestMigrationState: the marks as KubeVirt's migrationState, through an
// abort that came too late and one that worked.
func TestMigrationState(t *testing.T) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	m := &Migration{UID: "u1", Role: MigrationSource, Source: "a", Target: "b", Mode: v1.MigrationPreCopy, Start: start, Abort: v1.MigrationAbortInProgress}
	m.Finish(start.Add(time.Second), "")
	s := m.State()
	if !s.Completed || s.Failed || s.AbortStatus != v1.MigrationAbortFailed || !s.AbortRequested || s.SourceNode != "a" || s.TargetNode != "b" ||
		s.MigrationUID != "u1" || s.EndTimestamp == nil || !s.EndTimestamp.Time.Equal(start.Add(time.Second)) || !s.StartTimestamp.Time.Equal(start) {
		t.Errorf("completed despite an abort: %+v", s)
	}
	m = &Migration{Role: MigrationSource, Abort: v1.MigrationAbortInProgress}
	m.Finish(start, "aborted")
	if s := m.State(); s.Completed || !s.Failed || s.AbortStatus != v1.MigrationAbortSucceeded || s.FailureReason != "aborted" {
		t.Errorf("aborted: %+v", s)
	}
	el, _ := (&Marks{Migration: m}).Element()
	back, err := ParseMarks(el)
	if err != nil || back.Migration == nil || *back.Migration.End != *m.End || back.Migration.Reason != "aborted" {
		t.Errorf("marks round trip: %s -> %+v (%v)", el, back, err)
	}
	if (*Migration)(nil).State() != nil || (*Migration)(nil).Finished() {
		t.Error("nil migration has a state")
	}
}

// TestIncoming: only a target's domain still receiving an unfinished
// migration is incoming; the source's, a finished one's, and one that
// already runs are not.
func TestIncoming(t *testing.T) {
	end := time.Now()
	mark := func(role MigrationRole, finished bool) *Marks {
		m := &Migration{Role: role}
		if finished {
			m.Finish(end, "")
		}
		return &Marks{Owner: "b", Migration: m}
	}
	receiving := domain.Observation{Defined: true, State: domain.StatePaused, Reason: domain.PausedMigration}
	for _, c := range []struct {
		name string
		s    Snapshot
		want bool
	}{
		{"target receiving", Snapshot{Obs: receiving, Marks: mark(MigrationTarget, false)}, true},
		{"target running", Snapshot{Obs: domain.Observation{Defined: true, State: domain.StateRunning}, Marks: mark(MigrationTarget, false)}, false},
		{"target paused by the user", Snapshot{Obs: domain.Observation{Defined: true, State: domain.StatePaused, Reason: domain.PausedUser}, Marks: mark(MigrationTarget, false)}, false},
		{"finished", Snapshot{Obs: receiving, Marks: mark(MigrationTarget, true)}, false},
		{"source", Snapshot{Obs: receiving, Marks: mark(MigrationSource, false)}, false},
		{"no migration", Snapshot{Obs: receiving, Marks: &Marks{Owner: "b"}}, false},
		{"no marks", Snapshot{Obs: receiving}, false},
	} {
		if got := Incoming(c.s); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
