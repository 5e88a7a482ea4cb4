package launcher_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// migrationNamespace holds the VMIs of the migration tests.
const migrationNamespace = "vmi2libvirt-migrate"

// migrationNode is one libvirt host of the migration tests (.ci/node.sh)
// with a launcher of its own on it.
type migrationNode struct {
	uri, stateDir string
	cfg           launcher.Config
	l             *launcher.Launcher
}

// newMigrationNode starts the node called name and a launcher on it, with
// a state folder of its own; hostDisks, when not empty, is a folder shared
// by the nodes where hostDisk volumes may be.
func newMigrationNode(t *testing.T, name, hostDisks string) *migrationNode {
	t.Helper()
	guestOnce.Do(func() { _, guestErr = testguest.Install(convert.DefaultImageStore, testguest.Options{}) })
	if guestErr != nil {
		hosttest.Missing(t, "test guest cannot be built: %v", guestErr)
	}
	n := &migrationNode{uri: hosttest.Node(t, name), stateDir: hosttest.Dir(t, testRoot, "migrate-")}
	layout := convert.HostLayout{StateDir: n.stateDir, ImageStore: convert.DefaultImageStore}
	if hostDisks != "" {
		layout.HostDiskAllow = []string{hostDisks}
	}
	n.cfg = launcher.Config{URI: n.uri, Emulate: true, Owner: name, Layout: layout}
	n.open(t)
	return n
}

// open connects a new launcher to the node, in place of the last one.
func (n *migrationNode) open(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := launcher.New(ctx, n.cfg)
	if err != nil {
		t.Fatalf("launcher.New on %s: %v", n.uri, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	n.l = l
}

// migrationPair starts the two nodes of one migration test, m<pid><tag>a
// and m<pid><tag>b (tag: a letter of the test's own), and runs vmi on a,
// its guest booted; at the end of the test it is deleted from both. With
// hostDisks, the nodes share that folder for hostDisk volumes.
func migrationPair(t *testing.T, tag, hostDisks string, vmi *v1.VirtualMachineInstance) (a, b *migrationNode) {
	t.Helper()
	a = newMigrationNode(t, fmt.Sprintf("m%d%sa", os.Getpid(), tag), hostDisks)
	b = newMigrationNode(t, fmt.Sprintf("m%d%sb", os.Getpid(), tag), hostDisks)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := a.l.Sync(ctx, vmi); err != nil {
		t.Fatalf("Sync on the source: %v", err)
	}
	t.Cleanup(func() { _ = a.l.Delete(context.Background(), vmi); _ = b.l.Delete(context.Background(), vmi) })
	return a, b
}

// migrationVMI is a 256 MiB test guest with a 16 MiB disk, waiting with a
// shell on its console: an empty disk (in the state folder), or with
// hostDisk set a hostDisk volume of that path.
func migrationVMI(t *testing.T, base, hostDisk string) *v1.VirtualMachineInstance {
	volume := "emptyDisk: {capacity: 16Mi}"
	if hostDisk != "" {
		volume = "hostDisk: {path: " + hostDisk + ", type: DiskOrCreate, capacity: 16Mi}"
	}
	vmi := decodeVMI(t, fmt.Sprintf(vmiYAML, uniqueName(base), 0, "", testguest.ActionIgnore,
		"    memory:\n      guest: 256Mi\n", "      disks:\n      - name: scratch\n        disk: {bus: virtio}",
		"  volumes:\n  - name: scratch\n    "+volume+"\n"))
	vmi.Namespace = migrationNamespace
	return vmi
}

// domains lists the domain names a libvirt host has.
func domains(t *testing.T, uri string) string {
	t.Helper()
	out, err := exec.Command("virsh", "-c", uri, "list", "--all", "--name").CombinedOutput()
	if err != nil {
		t.Fatalf("virsh list on %s: %v\n%s", uri, err, out)
	}
	return string(out)
}

// TestE2EMigrate moves a running test guest between two libvirt hosts on
// this machine (.ci/node.sh), with its empty disk copied from state folder
// to state folder and with a hostDisk in a folder both share: after the
// migration the target's console answers with the same boot ID, an
// uptime that went on, the same MAC, and the bytes written to the disk
// before; the source's domain and state folder are gone; the target's
// status reports Running and the completed migration. Migration time and
// downtime are logged (the README's figures).
func TestE2EMigrate(t *testing.T) {
	for _, shared := range []bool{false, true} {
		name := map[bool]string{false: "copy", true: "shared"}[shared]
		t.Run(name, func(t *testing.T) {
			dir, disk := "", ""
			if shared {
				dir = hosttest.Dir(t, testRoot, "shared-")
				disk = dir + "/scratch.img"
			}
			vmi := migrationVMI(t, "mig"+name[:1], disk)
			a, b := migrationPair(t, name[:1], dir, vmi)
			testMigrate(t, a, b, vmi)
		})
	}
}

func testMigrate(t *testing.T, a, b *migrationNode, vmi *v1.VirtualMachineInstance) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sh := attachShell(t, a.l, vmi)
	sh.waitBoot()
	before := sh.facts()
	written := "written-before-" + strconv.Itoa(os.Getpid())
	sh.ask("echo " + written + " | dd of=/dev/vda conv=fsync 2>/dev/null; echo ok")
	_ = sh.rw.Close()

	var last launcher.MigrationProgress
	reports := 0
	began := time.Now()
	state, err := a.l.Migrate(ctx, vmi, b.l, launcher.MigrateOptions{Progress: func(p launcher.MigrationProgress) {
		last = p
		reports++
	}})
	took := time.Since(began)
	if err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	t.Logf("migration: Migrate took %s, job %s, downtime %s, %d bytes moved (%d of disk), %d iterations, %d progress reports",
		took, last.Elapsed, last.Downtime, last.DataProcessed, last.DiskProcessed, last.MemIteration, reports)
	if !state.Completed || state.Failed || state.SourceNode != a.l.Owner() || state.TargetNode != b.l.Owner() || state.EndTimestamp == nil {
		t.Errorf("migration state %+v", state)
	}
	if got := domains(t, a.uri); strings.Contains(got, domainName(vmi)) {
		t.Errorf("the source still has the domain: %q", got)
	}
	if _, err := os.Stat(convert.HostLayout{StateDir: a.stateDir}.StateFolder(vmiWithNamespace(vmi))); !os.IsNotExist(err) {
		t.Errorf("the source's state folder: %v, want it removed", err)
	}
	st, err := b.l.Status(ctx, vmi)
	if err != nil || st.Phase != v1.Running || st.MigrationState == nil || !st.MigrationState.Completed {
		t.Errorf("target status: phase %s, migrationState %+v (%v)", st.Phase, st.MigrationState, err)
	}

	sh = attachShell(t, b.l, vmi)
	after := sh.facts()
	if after.bootID != before.bootID || after.mac != before.mac || after.uptime <= before.uptime {
		t.Errorf("the guest noticed: before %+v, after %+v", before, after)
	}
	if got := sh.ask(fmt.Sprintf("dd if=/dev/vda bs=%d count=1 2>/dev/null", len(written))); got != written {
		t.Errorf("the disk reads %q after the migration, want %q", got, written)
	}
}

// vmiWithNamespace is vmi with its namespace set as the launcher sets it.
func vmiWithNamespace(vmi *v1.VirtualMachineInstance) *v1.VirtualMachineInstance {
	v := vmi.DeepCopy()
	if v.Namespace == "" {
		v.Namespace = "default"
	}
	return v
}

// TestE2EMigrateAborted: a migration aborted midway (its context ended
// at the first progress report with data moved) and those to targets that
// cannot prepare (one running a VMI of the name, one without the image)
// leave the guest running on the source, untouched (same boot ID), the
// status saying the migration failed, and nothing on the target.
func TestE2EMigrateAborted(t *testing.T) {
	vmi := migrationVMI(t, "abort", "")
	a, b := migrationPair(t, "x", "", vmi)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sh := attachShell(t, a.l, vmi)
	sh.waitBoot()
	before := sh.facts()

	mctx, stop := context.WithCancel(ctx)
	var reported *launcher.MigrationProgress
	_, err := a.l.Migrate(mctx, vmi, b.l, launcher.MigrateOptions{PollInterval: 50 * time.Millisecond, Progress: func(p launcher.MigrationProgress) {
		if reported == nil && p.DataProcessed > 0 {
			reported = &p
			stop()
		}
	}})
	stop()
	var me *launcher.MigrationError
	if !errors.As(err, &me) || !errors.Is(err, launcher.ErrMigration) || !me.State.Failed || me.State.AbortStatus != v1.MigrationAbortSucceeded {
		t.Fatalf("aborted Migrate: %v (%+v), want a *MigrationError, failed, abort succeeded", err, me)
	}
	if reported == nil || reported.DataRemaining == 0 {
		t.Errorf("aborted before any progress (%+v): not midway", reported)
	}
	t.Logf("aborted after %+v: %v", reported, err)
	checkStayed(t, a, b, vmi, before)
	if st, err := a.l.Status(ctx, vmi); err != nil || st.MigrationState == nil || !st.MigrationState.Failed || st.MigrationState.AbortStatus != v1.MigrationAbortSucceeded {
		t.Errorf("source status after the abort: %+v (%v)", st.MigrationState, err)
	}

	// A target that already has a domain of the name cannot prepare.
	if err := b.l.Sync(ctx, vmi); err != nil {
		t.Fatalf("Sync of the same VMI on the target: %v", err)
	}
	if _, err := a.l.Migrate(ctx, vmi, b.l, launcher.MigrateOptions{}); !errors.Is(err, launcher.ErrConflict) {
		t.Errorf("Migrate to a target that runs the VMI: %v, want ErrConflict", err)
	}
	if err := b.l.Delete(ctx, vmi); err != nil {
		t.Fatal(err)
	}
	checkStayed(t, a, b, vmi, before)

	// A target whose image store lacks the guest's image (and no registry
	// has it) cannot prepare either, and leaves no state folder behind.
	bare := &migrationNode{uri: b.uri, cfg: b.cfg}
	bare.cfg.Owner += "-bare"
	bare.cfg.Layout.StateDir = hosttest.Dir(t, testRoot, "migrate-")
	bare.cfg.Layout.ImageStore = hosttest.Dir(t, testRoot, "images-")
	bare.open(t)
	if _, err := a.l.Migrate(ctx, vmi, bare.l, launcher.MigrateOptions{}); !errors.Is(err, launcher.ErrHostNotReady) {
		t.Errorf("Migrate to a target without the image: %v, want ErrHostNotReady", err)
	}
	if left, _ := os.ReadDir(bare.cfg.Layout.StateDir); len(left) != 0 {
		t.Errorf("the target that could not prepare left %v", left)
	}
	checkStayed(t, a, b, vmi, before)
}

// checkStayed checks that the guest runs on a, not b, and did not reboot.
func checkStayed(t *testing.T, a, b *migrationNode, vmi *v1.VirtualMachineInstance, before guestFacts) {
	t.Helper()
	if got := domains(t, b.uri); strings.Contains(got, domainName(vmi)) {
		t.Errorf("the target has the domain: %q", got)
	}
	if st, err := a.l.Status(context.Background(), vmi); err != nil || st.Phase != v1.Running {
		t.Errorf("source phase %s (%v), want Running", st.Phase, err)
	}
	sh := attachShell(t, a.l, vmi)
	if now := sh.facts(); now.bootID != before.bootID || now.uptime <= before.uptime {
		t.Errorf("the guest on the source rebooted: before %+v, now %+v", before, now)
	}
	_ = sh.rw.Close()
}

// TestE2EMigrateLaunchersGone: both launchers go away while libvirt
// migrates (the target's closed first, then the source's, which waits for
// the job): new launchers on both sides settle the migration from the
// marks — the source removes its migrated domain, the target records the
// completion — and the guest runs once, on the target, unrebooted.
func TestE2EMigrateLaunchersGone(t *testing.T) {
	vmi := migrationVMI(t, "gone", "")
	a, b := migrationPair(t, "g", "", vmi)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sh := attachShell(t, a.l, vmi)
	sh.waitBoot()
	before := sh.facts()
	_ = sh.rw.Close()

	var once sync.Once
	gone := make(chan struct{})
	src, dst := a.l, b.l
	_, err := src.Migrate(ctx, vmi, dst, launcher.MigrateOptions{Progress: func(p launcher.MigrationProgress) {
		if p.DataProcessed > 0 {
			once.Do(func() {
				_ = dst.Close()
				go func() { _ = src.Close(); close(gone) }()
			})
		}
	}})
	<-gone
	t.Logf("Migrate with both launchers closed midway: %v", err)

	a.open(t)
	b.open(t)
	if got := domains(t, a.uri); strings.Contains(got, domainName(vmi)) {
		t.Errorf("the restarted source kept the migrated domain: %q", got)
	}
	st, err := b.l.Status(ctx, vmi)
	if err != nil || st.Phase != v1.Running || st.MigrationState == nil || !st.MigrationState.Completed || st.MigrationState.EndTimestamp == nil {
		t.Errorf("restarted target: phase %s, migrationState %+v (%v)", st.Phase, st.MigrationState, err)
	}
	if st, err := a.l.Status(ctx, vmi); err != nil || st.Phase != v1.Pending {
		t.Errorf("restarted source's Status: %s (%v), want Pending (no domain)", st.Phase, err)
	}
	sh = attachShell(t, b.l, vmi)
	if now := sh.facts(); now.bootID != before.bootID || now.uptime <= before.uptime {
		t.Errorf("after the restarts: before %+v, now %+v", before, now)
	}
}

// TestE2EMigrateAbortedWatcher: the target host's long-lived launcher (a
// node agent's, watching its host) is not the launcher a migration prepares
// the target with (the source's agent makes one of its own, same owner). A
// migration aborted inside libvirt's job (a 4 MiB/s cap keeps it there
// for seconds) makes and destroys an incoming domain on the target: the
// watcher must not report the VMI ended there — the guest never arrived —
// and once a second migration completed it reports it Running, never
// Failed. (The watcher reported Failed from the destroyed incoming domain
// and kept it, a final phase being final; on Kubernetes the target's agent
// then wrote Failed on the VMI that had just migrated.)
func TestE2EMigrateAbortedWatcher(t *testing.T) {
	vmi := migrationVMI(t, "watched", "")
	a, b := migrationPair(t, "w", "", vmi)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	sh := attachShell(t, a.l, vmi)
	sh.waitBoot()
	before := sh.facts()
	_ = sh.rw.Close()

	var mu sync.Mutex
	var seen []v1.VirtualMachineInstancePhase
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		for ev := range b.l.Watch(wctx) {
			if ev.Name == vmi.Name && !ev.Deleted {
				mu.Lock()
				seen = append(seen, ev.Status.Phase)
				mu.Unlock()
			}
		}
	}()
	target := func() *launcher.Launcher {
		l, err := launcher.New(ctx, b.cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		return l
	}
	mctx, stop := context.WithCancel(ctx)
	var at *launcher.MigrationProgress
	_, err := a.l.Migrate(mctx, vmi, target(), launcher.MigrateOptions{Bandwidth: 4 << 20, PollInterval: 50 * time.Millisecond,
		Progress: func(p launcher.MigrationProgress) {
			if at == nil && p.DataProcessed > 0 {
				at = &p
				// The watcher reads the incoming domain, as an agent's
				// reconcilers do when libvirt's events name it.
				incoming, err := b.l.Status(ctx, vmi)
				t.Logf("the target's watcher in the job: phase %s, paused %v (%v)", incoming.Phase, hasCondition(incoming, v1.VirtualMachineInstancePaused), err)
				stop()
			}
		}})
	stop()
	if !errors.Is(err, launcher.ErrMigration) || at == nil || at.DataRemaining == 0 {
		t.Fatalf("Migrate aborted in the job: %v (at %+v), want ErrMigration midway", err, at)
	}
	t.Logf("aborted %s into the job, %d of %d bytes moved", at.Elapsed, at.DataProcessed, at.DataTotal)
	time.Sleep(time.Second) // the watcher's events of the incoming domain
	if st, err := b.l.Status(ctx, vmi); err != nil || st.Phase != v1.Pending {
		t.Errorf("the target's watcher after the abort: phase %s (%v), want Pending (no guest here)", st.Phase, err)
	}
	checkStayed(t, a, b, vmi, before)

	if _, err := a.l.Migrate(ctx, vmi, target(), launcher.MigrateOptions{}); err != nil {
		t.Fatalf("the second Migrate: %v", err)
	}
	st, err := b.l.Status(ctx, vmi)
	if err != nil || st.Phase != v1.Running {
		t.Errorf("the target's watcher after the migration: phase %s (%v), want Running", st.Phase, err)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("the watcher's phases: %v", seen)
	for _, p := range seen {
		if p == v1.Failed || p == v1.Succeeded {
			t.Errorf("the target's watcher reported the VMI %s: %v", p, seen)
			break
		}
	}
}

// hasCondition tells whether status has the condition typ, true.
func hasCondition(status v1.VirtualMachineInstanceStatus, typ v1.VirtualMachineInstanceConditionType) bool {
	for _, c := range status.Conditions {
		if c.Type == typ && c.Status == "True" {
			return true
		}
	}
	return false
}
