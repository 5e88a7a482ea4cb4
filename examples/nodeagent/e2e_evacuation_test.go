package main

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/controlplane/evacuation"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// TestE2EEvacuate: two test guests run on node A (the system libvirtd),
// "evac" with evictionStrategy LiveMigrate and "stay" with None; node B's
// agent runs on a second libvirt host of this machine. `kubectl taint node
// A kubevirt.io/drain=draining:NoSchedule` and `kubectl cordon A` → the
// control plane's evacuation controller creates one migration
// (kubevirt-evacuation-…, annotated with A), evac runs on B with the same
// boot ID and an uptime that went on (asked through virtctl console), its
// evacuationNodeName cleared, its domain gone from A's libvirt and running
// on B's; stay runs on A as before, with no migration. The time from the
// taint to evac Running and Ready on B is logged.
func TestE2EEvacuate(t *testing.T) {
	pool := uniqueName("pool")
	w, _ := newVirtctlVMWorldWith(t, "-node-labels", "example.com/pool="+pool)
	nodeB := uniqueName("node")
	uriB := hosttest.Node(t, nodeB)
	ns := w.namespace(t, "evacuate")

	strategies := map[string]virtv1.EvictionStrategy{"evac": virtv1.EvictionStrategyLiveMigrate, "stay": virtv1.EvictionStrategyNone}
	for name, s := range strategies {
		vmi := guestVMI(ns, name, 30, testguest.ActionACPI)
		vmi.Spec.NodeSelector = map[string]string{"example.com/pool": pool}
		vmi.Spec.EvictionStrategy = &s
		w.create(t, vmi)
	}
	for name := range strategies {
		if vmi := w.waitReady(t, ns, name, bootTimeout); vmi.Status.NodeName != w.node {
			t.Fatalf("VMI %s on node %q, want A (%s)", name, vmi.Status.NodeName, w.node)
		}
		waitConsole(t, w.dir, ns, name, testguest.ShellMarker, bootTimeout)
	}
	// B starts only now: it would have claimed the VMIs as well as A.
	w.startSecondNode(t, nodeB, uriB, pool)
	before := w.bootFacts(t, ns, "evac")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	began := time.Now()
	for _, args := range [][]string{
		{"taint", "node", w.node, evacuation.NodeDrainTaintKey + "=draining:NoSchedule"},
		{"cordon", w.node},
	} {
		if _, stderr, err := w.cluster.Kubectl(ctx, args...); err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
		}
	}
	vmi := w.waitRunningOn(t, ns, "evac", nodeB, 2*time.Minute)
	t.Logf("taint and cordon → evac Running on B in %s", time.Since(began).Round(time.Millisecond))
	if vmi.Status.EvacuationNodeName != "" {
		t.Errorf("evac's evacuationNodeName %q after it left A, want it cleared", vmi.Status.EvacuationNodeName)
	}
	after := w.bootFacts(t, ns, "evac")
	t.Logf("evac's guest: boot %s, uptime %.2f s on A → boot %s, uptime %.2f s on B", before.bootID, before.uptime, after.bootID, after.uptime)
	if after.bootID != before.bootID || after.uptime <= before.uptime {
		t.Errorf("the guest noticed: boot ID %s → %s, uptime %.2f → %.2f s", before.bootID, after.bootID, before.uptime, after.uptime)
	}

	var migrations virtv1.VirtualMachineInstanceMigrationList
	if err := w.client.List(context.Background(), &migrations, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(migrations.Items) != 1 {
		t.Fatalf("%d migrations in the namespace, want evac's one: %+v", len(migrations.Items), migrations.Items)
	}
	if m := migrations.Items[0]; m.Spec.VMIName != "evac" || m.Annotations[virtv1.EvacuationMigrationAnnotation] != w.node ||
		!strings.HasPrefix(m.Name, "kubevirt-evacuation-") || m.Status.Phase != virtv1.MigrationSucceeded {
		t.Errorf("migration %s of %s, annotations %v, phase %s; want KubeVirt's evacuation migration of evac from %s, Succeeded",
			m.Name, m.Spec.VMIName, m.Annotations, m.Status.Phase, w.node)
	}
	if exists, _, _ := w.domain(t, ns, "evac"); exists {
		t.Error("evac's domain is still defined on A's libvirt")
	}
	connB, err := libvirt.NewConnect(uriB)
	if err != nil {
		t.Fatal(err)
	}
	defer connB.Close()
	if exists, id, _ := domainOn(t, connB, ns, "evac"); !exists || id < 0 {
		t.Errorf("evac's domain on B's libvirt: defined %v, id %d; want running", exists, id)
	}

	stay := w.get(t, ns, "stay")
	if stay.Status.NodeName != w.node || stay.Status.Phase != virtv1.Running || stay.Status.MigrationState != nil || stay.Status.EvacuationNodeName != "" {
		t.Errorf("stay (evictionStrategy None) after the drain: %s, migrationState %+v, evacuationNodeName %q; want left alone on A",
			describe(stay), stay.Status.MigrationState, stay.Status.EvacuationNodeName)
	}
	if exists, id, _ := w.domain(t, ns, "stay"); !exists || id < 0 {
		t.Errorf("stay's domain on A: defined %v, id %d; want running", exists, id)
	}
	for _, v := range []*virtv1.VirtualMachineInstance{vmi, stay} {
		if err := w.client.Delete(context.Background(), v); err != nil {
			t.Fatal(err)
		}
	}
	for name := range strategies {
		w.waitGone(t, ns, name, time.Minute)
	}
}

// startSecondNode starts node B's agent on the libvirt host uriB with the
// pool label, serving the node API (virtctl console reaches its VMIs),
// with extra flags, and waits until it is schedulable.
func (w *virtctlWorld) startSecondNode(t testing.TB, node, uri, pool string, extra ...string) *agentProcess {
	t.Helper()
	return w.startSecondNodeIn(t, stateDir(t), node, uri, pool, extra...)
}

// startSecondNodeIn is startSecondNode with the state folder dir (that of
// its agent before, for a restart).
func (w *virtctlWorld) startSecondNodeIn(t testing.TB, dir, node, uri, pool string, extra ...string) *agentProcess {
	t.Helper()
	a := w.startNode(t, node, dir, append([]string{"-node-labels", "example.com/pool=" + pool, "-libvirt-uri", uri,
		"-api-address", "127.0.0.1:0", "-api-certs", w.certs("nodeagent")}, extra...)...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a.waitFor(ctx, t, "node API address written to the Node")
	w.waitNode(t, node, "schedulable", time.Minute, schedulable("true"))
	return a
}

// waitRunningOn waits until the VMI ns/name is Running and Ready on node,
// its status.nodeName and kubevirt.io/nodeName label naming it.
func (w *virtctlWorld) waitRunningOn(t testing.TB, ns, name, node string, timeout time.Duration) *virtv1.VirtualMachineInstance {
	t.Helper()
	return w.waitVMI(t, ns, name, "on "+node+", Running and Ready", timeout, func(v *virtv1.VirtualMachineInstance) bool {
		return v.Status.NodeName == node && v.Labels[virtv1.NodeNameLabel] == node && v.Status.Phase == virtv1.Running &&
			conditionStatus(v, virtv1.VirtualMachineInstanceReady) == k8sv1.ConditionTrue
	})
}

// bootFacts are what the guest says of its boot.
type bootFacts struct {
	bootID string
	uptime float64
}

// bootAnswer is what `echo boot-$(cat /proc/sys/kernel/random/boot_id)-up-$(cut -d' ' -f1 /proc/uptime)-end`
// prints.
var bootAnswer = regexp.MustCompile(`boot-([0-9a-f-]{36}-up-[0-9]+\.[0-9]+)-end`)

// bootFacts asks the guest of the VMI ns/name its boot ID and uptime
// through virtctl console, on whichever node it runs.
func (w *virtctlWorld) bootFacts(t testing.TB, ns, name string) bootFacts {
	t.Helper()
	c := w.console(t, "", ns, name)
	c.connected(t, time.Minute)
	answer := c.ask(t, "echo boot-$(cat /proc/sys/kernel/random/boot_id)-up-$(cut -d' ' -f1 /proc/uptime)-end", bootAnswer, time.Minute)
	c.leave(t)
	id, up, _ := strings.Cut(answer, "-up-")
	uptime, err := strconv.ParseFloat(up, 64)
	if err != nil {
		t.Fatal(err)
	}
	return bootFacts{bootID: id, uptime: uptime}
}
