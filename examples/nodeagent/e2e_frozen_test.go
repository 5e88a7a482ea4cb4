package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	virtv1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
)

// agentFrozenFor is how long TestE2EFrozenLibvirtd freezes the agent's
// libvirtd: longer than any keepalive would wait (libvirt's own default
// is 5 s, 5 unanswered).
const agentFrozenFor = 30 * time.Second

// TestE2EFrozenLibvirtd freezes the agent's libvirtd (SIGSTOP, then
// SIGCONT) for agentFrozenFor while VMIs are deleted and created through
// the API server, as a machine too loaded for the daemon to answer does
// (the density test once saw a VMI left deleting for minutes after a
// keepalive reset the agent's connection mid-start: libvirt 9.0's client
// then crashes an agent with several calls in flight, as this test did
// before the launcher left client keepalive off). The agent's calls wait
// for the thaw: after it every deleted VMI is gone and every new one
// Running within a minute, the VMIs left alone run on, libvirt holds
// exactly the domains of the VMIs that exist, and the agent still runs.
func TestE2EFrozenLibvirtd(t *testing.T) {
	w := newWorld(t)
	name := fmt.Sprintf("fz%d", os.Getpid())
	uri := hosttest.Node(t, name)
	agent := w.startNode(t, name, stateDir(t), "-libvirt-uri", uri)
	ns := w.namespace(t, "frozen")
	create := func(vmi string) {
		t.Helper()
		if err := w.client.Create(context.Background(), bound(densityVMI(ns, vmi, false), name)); err != nil {
			t.Fatalf("create VMI %s: %v", vmi, err)
		}
	}
	keep, del, add := []string{"keep-0", "keep-1"}, []string{"del-0", "del-1"}, []string{"new-0", "new-1"}
	for _, vmi := range append(keep, del...) {
		create(vmi)
	}
	for _, vmi := range append(keep, del...) {
		w.waitPhase(t, ns, vmi, virtv1.Running, 2*time.Minute)
	}

	thaw, err := hosttest.FreezeNodeLibvirtd(t, name)
	if err != nil {
		t.Fatal(err)
	}
	frozen := time.Now()
	for _, vmi := range del {
		if err := w.client.Delete(context.Background(), w.get(t, ns, vmi)); err != nil {
			t.Fatal(err)
		}
	}
	for _, vmi := range add {
		create(vmi)
	}
	time.Sleep(agentFrozenFor - time.Since(frozen))
	if err := thaw(); err != nil {
		t.Fatal(err)
	}
	thawed := time.Now()

	for _, vmi := range del {
		w.waitGone(t, ns, vmi, time.Minute)
	}
	t.Logf("deleted VMIs gone %s after the thaw", time.Since(thawed).Round(time.Millisecond))
	for _, vmi := range add {
		w.waitPhase(t, ns, vmi, virtv1.Running, time.Minute)
	}
	t.Logf("new VMIs Running %s after the thaw", time.Since(thawed).Round(time.Millisecond))
	for _, vmi := range keep {
		if v := w.get(t, ns, vmi); v.Status.Phase != virtv1.Running {
			t.Errorf("VMI %s left alone is %s after the thaw", vmi, v.Status.Phase)
		}
	}
	if err := syscall.Kill(agent.PID(), 0); err != nil {
		t.Errorf("the agent is gone after the thaw (%v); its output:\n%s", err, agent.output())
	}
	out, err := exec.Command("virsh", "-c", uri, "list", "--all", "--name").CombinedOutput()
	if err != nil {
		t.Fatalf("virsh list: %v: %s", err, out)
	}
	var want []string
	for _, vmi := range append(keep, add...) {
		want = append(want, convert.DomainName(densityVMI(ns, vmi, false)))
	}
	got := strings.Fields(string(out))
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("domains after the thaw %q, want %q", got, want)
	}
}
