package main

import (
	"context"
	"os"
	"testing"
	"time"

	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// TestE2EMigrateAgentKilled: two VMs' guests, "one" and "two", on node A
// (the system libvirtd), node B's agent on a second libvirt host
// (hosttest.Node), both agents capping a migration at migrationBandwidth;
// an agent SIGKILLed while libvirt's job moves data (seen on A's libvirt).
// Each time the job outlives the agent, and after the agent's restart
// exactly one guest runs, on the node the status names (nodeName,
// kubevirt.io/nodeName, migrationState completed or failed, with its end),
// the migration object Succeeded or Failed accordingly, no domain on the
// other side, and the guest's boot ID is the one it had (asked through
// virtctl console):
//
//  1. one: A, the source, killed; the migration deleted while no agent
//     runs (the control plane asks the abort); A restarted while the job
//     still runs → its agent aborts the job: Failed, abortRequested, the
//     guest on A, the object gone;
//  2. one: B, the target, killed; restarted at once → Succeeded, the guest
//     on B;
//  3. two: A, the source, killed; the job completes while no agent runs;
//     A restarted → Succeeded, the guest on B (the restarted source finds
//     it there and finishes the status).
//
// (B → A cannot be shown here: A's libvirt is the system one, whose
// qemu:///system names B's own daemon inside B's namespace.)
func TestE2EMigrateAgentKilled(t *testing.T) {
	pool := uniqueName("pool")
	flags := []string{"-node-labels", "example.com/pool=" + pool, "-migration-bandwidth", migrationBandwidth}
	w, vw := newVirtctlVMWorldWith(t, flags...)
	nodeB := uniqueName("node")
	uriB := hosttest.Node(t, nodeB)
	ns := w.namespace(t, "migkill")

	for _, name := range []string{"one", "two"} {
		vm := vw.guestVM(ns, name, virtv1.RunStrategyAlways, 30, testguest.ActionACPI)
		vm.Spec.Template.Spec.NodeSelector = map[string]string{"example.com/pool": pool}
		vw.createVM(t, vm)
	}
	for _, name := range []string{"one", "two"} {
		if _, vmi := vw.waitVM(t, ns, name, "Running", bootTimeout, runningVM); vmi.Status.NodeName != w.node {
			t.Fatalf("VMI %s on node %q, want A (%s)", name, vmi.Status.NodeName, w.node)
		}
		waitConsole(t, w.dir, ns, name, testguest.ShellMarker, bootTimeout)
	}
	bFlags := []string{"-migration-bandwidth", migrationBandwidth}
	dirB := stateDir(t)
	agentB := w.startSecondNodeIn(t, dirB, nodeB, uriB, pool, bFlags...)
	connB, err := libvirt.NewConnect(uriB)
	if err != nil {
		t.Fatal(err)
	}
	defer connB.Close()
	k := &killedMigration{w: w, ns: ns, connB: connB, nodeB: nodeB, facts: map[string]bootFacts{},
		restartFlags: append([]string{"-api-address", "127.0.0.1:0", "-api-certs", w.certs("nodeagent"), "-claim"}, flags...)}
	for _, name := range []string{"one", "two"} {
		k.facts[name] = w.bootFacts(t, ns, name)
	}
	restartA := func() {
		w.agent = w.startNode(t, w.node, w.dir, k.restartFlags...)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		w.agent.waitFor(ctx, t, "node API address written to the Node")
		t.Logf("A's agent back %s after the kill", time.Since(k.killed).Round(time.Millisecond))
	}

	// 1. The source's agent killed, the migration deleted meanwhile.
	mig := k.killMidJob(t, "one", w.agent, "A (source)")
	if err := w.client.Delete(context.Background(), mig); err != nil {
		t.Fatal(err)
	}
	w.waitVMI(t, ns, "one", "with abortRequested", time.Minute, func(v *virtv1.VirtualMachineInstance) bool {
		ms := v.Status.MigrationState
		return ms != nil && ms.MigrationUID == mig.UID && ms.AbortRequested
	})
	restartA()
	if _, running := readJob(w.conn, ns, "one"); !running {
		t.Fatalf("1: the job ended before A's agent was back (the abort cannot be shown): lower migrationBandwidth")
	}
	k.settled(t, "1", "one", mig, virtv1.MigrationFailed, w.node)

	// 2. The target's agent killed, restarted at once.
	mig = k.killMidJob(t, "one", agentB, "B (target)")
	w.startSecondNodeIn(t, dirB, nodeB, uriB, pool, bFlags...)
	_, running := readJob(w.conn, ns, "one")
	t.Logf("2: B's agent back %s after the kill, the job still running: %v", time.Since(k.killed).Round(time.Millisecond), running)
	k.settled(t, "2", "one", mig, virtv1.MigrationSucceeded, nodeB)

	// 3. The source's agent killed; the job ends while no agent runs.
	mig = k.killMidJob(t, "two", w.agent, "A (source)")
	last := waitNoJob(t, w.conn, ns, "two", 2*time.Minute)
	t.Logf("3: the job ended with no agent, at %s, %.1f MB moved", last.elapsed.Round(time.Millisecond), float64(last.processed)/1e6)
	if exists, id, _ := domainOn(t, connB, ns, "two"); !exists || id < 0 {
		t.Fatalf("3: after the job ended unwatched, the domain on B: defined %v, id %d; want running", exists, id)
	}
	restartA()
	k.settled(t, "3", "two", mig, virtv1.MigrationSucceeded, nodeB)
	vw.deleteVM(t, ns, "one")
	vw.deleteVM(t, ns, "two")
}

// killedMigration is TestE2EMigrateAgentKilled's world: the cluster, B's
// libvirt, how A's agent is restarted and what the guest said first.
type killedMigration struct {
	w            *virtctlWorld
	ns, nodeB    string
	connB        *libvirt.Connect
	restartFlags []string
	facts        map[string]bootFacts // what each guest said last
	killed       time.Time
}

// killMidJob runs virtctl migrate of the VM name from A, waits until
// libvirt's job moves data on A's libvirt, SIGKILLs the agent a and checks
// that the job runs on without it; it returns the migration.
func (k *killedMigration) killMidJob(t *testing.T, name string, a *agentProcess, who string) *virtv1.VirtualMachineInstanceMigration {
	t.Helper()
	k.w.mustRun(t, "-n", k.ns, "migrate", name)
	mig := k.w.runningMigration(t, k.ns, name, time.Minute)
	seen := waitJob(t, k.w.conn, k.ns, name, time.Minute)
	a.stop(t, os.Kill)
	k.killed = time.Now()
	after, ok := readJob(k.w.conn, k.ns, name)
	if !ok {
		t.Fatalf("libvirt's job ended with %s's agent", who)
	}
	t.Logf("%s: %s SIGKILLed %s into the job (%.1f MB moved); the job runs on: %s, %.1f MB moved, %.1f MB remaining",
		name, who, seen.elapsed.Round(time.Millisecond), float64(seen.processed)/1e6,
		after.elapsed.Round(time.Millisecond), float64(after.processed)/1e6, float64(after.remaining)/1e6)
	return mig
}

// settled checks the end of mig of the VM name, which should be phase with
// the guest on node: the object's phase (Failed: deleted, its finalizer gone), the
// VMI's status, the domains on both libvirts, the guest's boot ID.
func (k *killedMigration) settled(t *testing.T, step, name string, mig *virtv1.VirtualMachineInstanceMigration, phase virtv1.VirtualMachineInstanceMigrationPhase, node string) {
	t.Helper()
	w, ns := k.w, k.ns
	got, gone := w.waitMigrationEnd(t, mig, 3*time.Minute)
	t.Logf("%s: the migration ended %s after the kill (phase %v, deleted %v)", step, time.Since(k.killed).Round(time.Millisecond), phaseOf(got), gone)
	switch {
	case gone && phase != virtv1.MigrationFailed:
		t.Fatalf("%s: the migration was deleted; want %s", step, phase)
	case !gone && got.Status.Phase != phase:
		t.Fatalf("%s: migration %s: %s, want %s; its state %+v", step, mig.Name, got.Status.Phase, phase, got.Status.MigrationState)
	}
	vmi := w.waitRunningOn(t, ns, name, node, time.Minute)
	ms := vmi.Status.MigrationState
	failed := phase == virtv1.MigrationFailed
	if ms == nil || ms.MigrationUID != mig.UID || !ms.Completed || ms.Failed != failed || ms.EndTimestamp == nil {
		t.Errorf("%s: VMI migrationState %+v, want ended (failed %v) with an end", step, ms, failed)
	} else if failed && (!ms.AbortRequested || ms.AbortStatus != virtv1.MigrationAbortSucceeded) {
		t.Errorf("%s: migrationState abortRequested %v, abortStatus %q; want the abort succeeded", step, ms.AbortRequested, ms.AbortStatus)
	}
	t.Logf("%s: migrationState %s → %s, failed %v, reason %q", step, ms.SourceNode, ms.TargetNode, ms.Failed, ms.FailureReason)
	here, there := w.conn, k.connB
	if node == k.nodeB {
		here, there = k.connB, w.conn
	}
	if exists, id, _ := domainOn(t, here, ns, name); !exists || id < 0 {
		t.Errorf("%s: the domain on %s: defined %v, id %d; want running", step, node, exists, id)
	}
	if exists, _, _ := domainOn(t, there, ns, name); exists {
		t.Errorf("%s: a domain is left on the other side of %s", step, node)
	}
	now := w.bootFacts(t, ns, name)
	t.Logf("%s: the guest: boot %s, uptime %.2f s", step, now.bootID, now.uptime)
	if now.bootID != k.facts[name].bootID || now.uptime <= k.facts[name].uptime {
		t.Errorf("%s: the guest noticed: boot ID %s → %s, uptime %.2f → %.2f s", step, k.facts[name].bootID, now.bootID, k.facts[name].uptime, now.uptime)
	}
	k.facts[name] = now
}

// phaseOf is mig's phase, "deleted" for nil.
func phaseOf(mig *virtv1.VirtualMachineInstanceMigration) string {
	if mig == nil {
		return "deleted"
	}
	return string(mig.Status.Phase)
}
