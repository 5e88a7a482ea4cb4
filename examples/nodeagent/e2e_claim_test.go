package main

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// testTwoAgentsClaim: two agents on one libvirtd (two nodes, two state
// folders) with -claim and the same labels race for 6 unbound VMIs: each
// runs exactly once, on the node whose label it got, and each agent has
// made domains and folders only for its own. A VMI whose nodeSelector
// names one node goes there; one whose nodeSelector matches no node
// stays unbound.
func testTwoAgentsClaim(t *testing.T, w *world) {
	ns := w.namespace(t, "claim")
	pool := uniqueName("pool")
	nodes := []string{uniqueName("node"), uniqueName("node")}
	dirs := []string{stateDir(t), stateDir(t)}
	agents := make([]*agentProcess, 2)
	for i := range agents {
		agents[i] = w.startNode(t, nodes[i], dirs[i], "-claim", "-node-labels", "example.com/pool="+pool)
	}

	var names []string
	for i := range 6 {
		vmi := guestVMI(ns, fmt.Sprintf("free-%d", i), 0, testguest.ActionIgnore)
		vmi.Spec.NodeSelector = map[string]string{"example.com/pool": pool}
		w.create(t, vmi)
		names = append(names, vmi.Name)
	}
	pinned := guestVMI(ns, "pinned", 0, testguest.ActionIgnore)
	pinned.Spec.NodeSelector = map[string]string{"example.com/pool": pool, k8sv1.LabelHostname: nodes[1]}
	w.create(t, pinned)
	names = append(names, "pinned")
	nowhere := guestVMI(ns, "nowhere", 0, testguest.ActionIgnore)
	nowhere.Spec.NodeSelector = map[string]string{"example.com/pool": "another-" + pool}
	w.create(t, nowhere)

	perNode := map[string]int{}
	for _, name := range names {
		vmi := w.waitPhase(t, ns, name, virtv1.Running, 5*time.Minute)
		node := vmi.Labels[virtv1.NodeNameLabel]
		perNode[node]++
		if vmi.Status.NodeName != node || (node != nodes[0] && node != nodes[1]) {
			t.Errorf("%s: label %q, status.nodeName %q", name, node, vmi.Status.NodeName)
		}
		if name == "pinned" && node != nodes[1] {
			t.Errorf("pinned runs on %s, its nodeSelector names %s", node, nodes[1])
		}
		exists, id, owner := w.domain(t, ns, name)
		if !exists || id < 0 || owner != node {
			t.Errorf("%s: domain exists %v id %d owner %q; want running, owned by %s", name, exists, id, owner, node)
		}
		// Exactly one state folder: the owner's.
		for i, dir := range dirs {
			_, err := os.Stat(stateFolder(dir, ns, name))
			if has := err == nil; has != (nodes[i] == node) {
				t.Errorf("%s runs on %s; state folder in %s's: %v", name, node, nodes[i], has)
			}
		}
		w.waitEvent(t, ns, vmi.UID, "Started", 30*time.Second)
		if events := w.events(t, ns, vmi.UID); events["Scheduled"] != 1 || events["Started"] != 1 || events["SyncFailed"] != 0 {
			t.Errorf("%s: Events %v, want one Scheduled (the claim), one Started, no SyncFailed", name, events)
		}
	}
	won := agents[0].metric(t, "vmi2libvirt_nodeagent_claims_total", `result="won"`) + agents[1].metric(t, "vmi2libvirt_nodeagent_claims_total", `result="won"`)
	lost := agents[0].metric(t, "vmi2libvirt_nodeagent_claims_total", `result="lost"`) + agents[1].metric(t, "vmi2libvirt_nodeagent_claims_total", `result="lost"`)
	if won != 7 {
		t.Errorf("claims won: %v, want 7 (one per VMI)", won)
	}
	t.Logf("VMIs per node %v; claims lost to the other agent: %v", perNode, lost)
	if v := w.get(t, ns, "nowhere"); v.Labels[virtv1.NodeNameLabel] != "" || v.Status.Phase != "" {
		t.Errorf("a VMI no node matches was taken: %s", describe(v))
	}

	ctx := context.Background()
	for _, name := range names {
		if err := w.client.Delete(ctx, w.get(t, ns, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names {
		w.waitGone(t, ns, name, 2*time.Minute)
		if exists, _, _ := w.domain(t, ns, name); exists {
			t.Errorf("domain of %s left", name)
		}
	}
	for _, a := range agents {
		a.stop(t, os.Interrupt)
	}
}
