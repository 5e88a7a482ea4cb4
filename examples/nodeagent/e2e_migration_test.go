package main

import (
	"context"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// TestE2EMigrate: a VM's guest runs on node A (the system libvirtd);
// node B's agent runs on a second libvirt host of this machine
// (hosttest.Node); both nodes carry the VM's pool label, and A's agent caps
// a migration at migrationBandwidth. A first migration is deleted while
// libvirt's job runs (testMigrateAborted). `virtctl migrate`
// → a VirtualMachineInstanceMigration that goes through KubeVirt's phases
// to Succeeded, the VMI's nodeName and kubevirt.io/nodeName label name B,
// its migrationState is completed from A to B, the domain runs on B's
// libvirt (owned by B) and is gone from A's, B's agent keeps the VMI
// Running and Ready, and the guest did not notice the aborted migration
// nor the migration (its boot ID and uptime asked through virtctl
// console, on A and then on B). The time from virtctl migrate to Succeeded is logged.
func TestE2EMigrate(t *testing.T) {
	pool := uniqueName("pool")
	w, vw := newVirtctlVMWorldWith(t, "-node-labels", "example.com/pool="+pool, "-migration-bandwidth", migrationBandwidth)
	nodeB := uniqueName("node")
	uriB := hosttest.Node(t, nodeB)
	ns := w.namespace(t, "migrate")

	vm := vw.guestVM(ns, "mig", virtv1.RunStrategyAlways, 30, testguest.ActionACPI)
	vm.Spec.Template.Spec.NodeSelector = map[string]string{"example.com/pool": pool}
	vw.createVM(t, vm)
	_, vmi := vw.waitVM(t, ns, "mig", "Running", bootTimeout, runningVM)
	if vmi.Status.NodeName != w.node {
		t.Fatalf("VMI on node %q, want A (%s)", vmi.Status.NodeName, w.node)
	}
	waitConsole(t, w.dir, ns, "mig", testguest.ShellMarker, bootTimeout)
	// B starts only now: it would have claimed the VMI as well as A.
	w.startSecondNode(t, nodeB, uriB, pool)
	before := w.bootFacts(t, ns, "mig")

	testMigrateAborted(t, w, ns, nodeB, uriB)
	aborted := w.bootFacts(t, ns, "mig")
	if aborted.bootID != before.bootID || aborted.uptime <= before.uptime {
		t.Errorf("the guest noticed the aborted migration: boot ID %s → %s, uptime %.2f → %.2f s", before.bootID, aborted.bootID, before.uptime, aborted.uptime)
	}

	began := time.Now()
	if out := w.mustRun(t, "-n", ns, "migrate", "mig"); !strings.Contains(out, "VM mig was scheduled to migrate") {
		t.Errorf("virtctl migrate printed %q", out)
	}
	mig := w.waitMigration(t, ns, 3*time.Minute)
	took := time.Since(began)
	if mig.Status.Phase != virtv1.MigrationSucceeded {
		t.Fatalf("migration %s: %s, want Succeeded; its state %+v", mig.Name, mig.Status.Phase, mig.Status.MigrationState)
	}
	var phases []string
	for _, p := range mig.Status.PhaseTransitionTimestamps {
		phases = append(phases, string(p.Phase))
	}
	if got, want := strings.Join(phases, " "), "Pending Scheduling Scheduled PreparingTarget TargetReady Running Succeeded"; got != want {
		t.Errorf("migration phases %q, want %q", got, want)
	}
	t.Logf("virtctl migrate → Succeeded in %s", took.Round(time.Millisecond))

	vmi = w.waitRunningOn(t, ns, "mig", nodeB, time.Minute)
	ms := vmi.Status.MigrationState
	if ms == nil || !ms.Completed || ms.Failed || ms.SourceNode != w.node || ms.TargetNode != nodeB || ms.MigrationUID != mig.UID ||
		ms.StartTimestamp == nil || ms.EndTimestamp == nil || ms.TargetNodeAddress != uriB {
		t.Errorf("VMI migrationState %+v, want completed from %s to %s (%s) by %s", ms, w.node, nodeB, uriB, mig.UID)
	}
	after := w.bootFacts(t, ns, "mig")
	t.Logf("the guest: boot %s, uptime %.2f s on A → boot %s, uptime %.2f s on B", before.bootID, before.uptime, after.bootID, after.uptime)
	if after.bootID != before.bootID || after.uptime <= aborted.uptime {
		t.Errorf("the guest noticed the migration: boot ID %s → %s, uptime %.2f → %.2f s", before.bootID, after.bootID, aborted.uptime, after.uptime)
	}
	if exists, _, _ := w.domain(t, ns, "mig"); exists {
		t.Error("the domain is still defined on A's libvirt")
	}
	connB, err := libvirt.NewConnect(uriB)
	if err != nil {
		t.Fatal(err)
	}
	defer connB.Close()
	dom, err := connB.LookupDomainByName(domainName(ns, "mig"))
	if err != nil {
		t.Fatalf("the domain on B's libvirt: %v", err)
	}
	state, _, err := dom.GetState()
	dom.Free()
	if err != nil || state != libvirt.DOMAIN_RUNNING {
		t.Errorf("the domain on B: state %v (%v), want running", state, err)
	}
	// B's agent keeps it: still Running on B a few heartbeats later.
	time.Sleep(5 * time.Second)
	if got := w.get(t, ns, "mig"); got.Status.Phase != virtv1.Running || got.Status.NodeName != nodeB {
		t.Errorf("VMI after the migration settled: %s", describe(got))
	}
	vw.deleteVM(t, ns, "mig")
}

// testMigrateAborted: a migration deleted while libvirt's job runs (seen
// moving data on A's libvirt) is aborted inside the job (DomainAbortJob):
// the job ends before it moved everything, the object goes, the VMI's
// migrationState is failed with abortRequested and libvirt's cancellation
// as its reason, the VMI stays Running on A and the domain runs on A's
// libvirt, not on B's.
func testMigrateAborted(t *testing.T, w *virtctlWorld, ns, nodeB, uriB string) {
	w.mustRun(t, "-n", ns, "migrate", "mig")
	mig := w.runningMigration(t, ns, "mig", time.Minute)
	seen := waitJob(t, w.conn, ns, "mig", time.Minute)
	deleted := time.Now()
	if err := w.client.Delete(context.Background(), mig); err != nil {
		t.Fatal(err)
	}
	last := waitNoJob(t, w.conn, ns, "mig", time.Minute)
	t.Logf("libvirt's job: %s in and %.1f MB moved when the migration was deleted; ended %s later, at %s, %.1f MB moved, %.1f MB remaining",
		seen.elapsed.Round(time.Millisecond), float64(seen.processed)/1e6, time.Since(deleted).Round(time.Millisecond),
		last.elapsed.Round(time.Millisecond), float64(last.processed)/1e6, float64(last.remaining)/1e6)
	if last.remaining == 0 {
		t.Errorf("the job ended with nothing remaining (%+v): it completed rather than being aborted", last)
	}
	vmi := w.waitVMI(t, ns, "mig", "with the migration aborted", 2*time.Minute, func(v *virtv1.VirtualMachineInstance) bool {
		ms := v.Status.MigrationState
		return ms != nil && ms.MigrationUID == mig.UID && ms.Completed
	})
	ms := vmi.Status.MigrationState
	if !ms.Failed || !ms.AbortRequested || vmi.Status.NodeName != w.node || vmi.Labels[virtv1.NodeNameLabel] != w.node {
		t.Fatalf("after the abort: VMI %s, migrationState %+v; want failed, abortRequested, still on %s", describe(vmi), ms, w.node)
	}
	t.Logf("aborted: %s", ms.FailureReason)
	if !strings.Contains(ms.FailureReason, "canceled by client") {
		t.Errorf("failure reason %q: not libvirt's cancellation of its job", ms.FailureReason)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		err := w.client.Get(context.Background(), client.ObjectKeyFromObject(mig), mig)
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deleted migration is still there: finalizers %v", mig.Finalizers)
		}
	}
	if exists, id, _ := w.domain(t, ns, "mig"); !exists || id < 0 {
		t.Errorf("after the abort the domain on A: defined %v, id %d; want running", exists, id)
	}
	connB, err := libvirt.NewConnect(uriB)
	if err != nil {
		t.Fatal(err)
	}
	defer connB.Close()
	if dom, err := connB.LookupDomainByName(domainName(ns, "mig")); err == nil {
		dom.Free()
		t.Error("after the abort a domain is defined on B's libvirt")
	}
	w.waitVMI(t, ns, "mig", "Running and Ready on A", time.Minute, func(v *virtv1.VirtualMachineInstance) bool {
		return v.Status.NodeName == w.node && v.Status.Phase == virtv1.Running && conditionStatus(v, virtv1.VirtualMachineInstanceReady) == k8sv1.ConditionTrue
	})
}

// waitMigration waits until the namespace's one migration has ended and
// returns it.
func (w *world) waitMigration(t testing.TB, ns string, timeout time.Duration) *virtv1.VirtualMachineInstanceMigration {
	t.Helper()
	var last virtv1.VirtualMachineInstanceMigrationList
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if err := w.client.List(context.Background(), &last, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if len(last.Items) == 1 {
			if p := last.Items[0].Status.Phase; p == virtv1.MigrationSucceeded || p == virtv1.MigrationFailed {
				return &last.Items[0]
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no migration in %s ended within %s: %+v", ns, timeout, last.Items)
	return nil
}
