package main

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// TestE2EHeartbeat: the agent creates its Node (the test cluster has no
// kubelet) with kubevirt.io/schedulable=true, its -node-labels and the
// hostname, and renews kubevirt.io/heartbeat every -heartbeat-interval;
// while its libvirt connection is cut (a socket proxy the test controls,
// reached with -libvirt-uri) the Node is unschedulable, once libvirt is
// back schedulable again, and unschedulable when the agent stops.
func TestE2EHeartbeat(t *testing.T) {
	w := newWorld(t)
	proxy := startSocketProxy(t, "/var/run/libvirt/libvirt-sock")
	node := uniqueName("beat")
	a := w.startNode(t, node, stateDir(t), "-heartbeat-interval", "1s", "-node-labels", "example.com/pool=beat",
		"-libvirt-uri", "qemu+unix:///system?socket="+proxy.path)
	n := w.waitNode(t, node, "schedulable", time.Minute, schedulable("true"))
	if n.Labels["example.com/pool"] != "beat" || n.Labels[k8sv1.LabelHostname] != node {
		t.Errorf("Node labels %v, want example.com/pool=beat and the hostname", n.Labels)
	}
	first, ok, err := nodeapi.ParseHeartbeat(n)
	if !ok || err != nil {
		t.Fatalf("heartbeat annotation %v %v", ok, err)
	}
	w.waitNode(t, node, "with a newer heartbeat", 30*time.Second, func(n *k8sv1.Node) bool {
		at, _, _ := nodeapi.ParseHeartbeat(n)
		return at.After(first)
	})

	proxy.cut()
	cut := time.Now()
	cutOff := w.waitNode(t, node, "unschedulable while libvirt is cut off", time.Minute, schedulable("false"))
	t.Logf("libvirt cut off → unschedulable in %s", time.Since(cut).Round(time.Millisecond))
	// The host's labels stay while its facts cannot be read.
	if got, want := withPrefix(cutOff.Labels, virtv1.CPUModelLabel), withPrefix(n.Labels, virtv1.CPUModelLabel); len(want) == 0 || !slices.Equal(got, want) {
		t.Errorf("CPU model labels %v while libvirt is cut off, want %v (non-empty) as before", got, want)
	}
	proxy.restore(t)
	back := time.Now()
	w.waitNode(t, node, "schedulable once libvirt is back", 2*time.Minute, schedulable("true"))
	t.Logf("libvirt back → schedulable in %s", time.Since(back).Round(time.Millisecond))

	a.stop(t, os.Interrupt)
	w.waitNode(t, node, "unschedulable once the agent stopped", 10*time.Second, schedulable("false"))
}

// TestE2EHeartbeatLibvirtdStopped: an agent on a libvirt host of its own
// (hosttest.Node) whose libvirtd is stopped (SIGTERM, as a service stop)
// marks its Node unschedulable, and schedulable again once that libvirtd
// is started again at the same socket.
func TestE2EHeartbeatLibvirtdStopped(t *testing.T) {
	w := newWorld(t)
	name := uniqueName("beatstop") // one node per test run: runs in other worktrees may overlap
	uri := hosttest.Node(t, name)
	node := uniqueName("beat")
	w.startNode(t, node, stateDir(t), "-heartbeat-interval", "1s", "-libvirt-uri", uri)
	w.waitNode(t, node, "schedulable", time.Minute, schedulable("true"))

	// .ci/node.sh keeps the pid file beside the node's run/libvirt-sock.
	_, sock, ok := strings.Cut(uri, "?socket=")
	if !ok {
		t.Fatalf("node URI %q names no socket", uri)
	}
	pidFile := filepath.Join(filepath.Dir(filepath.Dir(sock)), "libvirtd.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("%s: %v", pidFile, err)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatalf("stop the node's libvirtd %d: %v", pid, err)
	}
	stopped := time.Now()
	w.waitNode(t, node, "unschedulable while its libvirtd is stopped", time.Minute, schedulable("false"))
	t.Logf("libvirtd stopped → unschedulable in %s", time.Since(stopped).Round(time.Millisecond))

	if again := hosttest.Node(t, name); again != uri {
		t.Fatalf("the node's URI %q after a restart, want %q", again, uri)
	}
	back := time.Now()
	w.waitNode(t, node, "schedulable once its libvirtd is back", 2*time.Minute, schedulable("true"))
	t.Logf("libvirtd back → schedulable in %s", time.Since(back).Round(time.Millisecond))
}

// TestE2EDeadNode: two agents with -claim on two libvirt hosts — A on
// this machine's libvirtd, B on a second one (hosttest.Node) — and a VM
// (runStrategy Always) whose VMI A runs; A is killed and its guest
// destroyed — a dead node, whose domain stays defined. After the control
// plane's grace period (-node-grace-period 10s) the VMI is Failed
// (NodeUnresponsive), A's Node unschedulable, and the VM gets a new VMI,
// which B claims and runs within the grace period + 10 s. A started
// again destroys and removes its stale domain before anything else: one
// guest in all, on B. The times from A's death to the new VMI bound to B
// and to Running there are logged.
func TestE2EDeadNode(t *testing.T) {
	const grace = 10 * time.Second
	vw := &vmWorld{world: newWorld(t)}
	uriB := hosttest.Node(t, uniqueName("deadb")) // unique: runs in other worktrees may overlap
	connB, err := libvirt.NewConnect(uriB)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = connB.Close() })
	vw.cp = vw.cluster.StartControlPlane(t, "-node-grace-period", grace.String())
	ns := vw.namespace(t, "deadnode")
	log := vw.recordVMIs(t, ns)
	pool := uniqueName("pool")
	nodeA, nodeB := uniqueName("node"), uniqueName("node")
	dirA, dirB := stateDir(t), stateDir(t)
	startA := func() *agentProcess {
		return vw.startNode(t, nodeA, dirA, "-claim", "-node-labels", "example.com/pool="+pool, "-heartbeat-interval", "1s")
	}
	a := startA()

	vm := vw.guestVM(ns, "vm1", virtv1.RunStrategyAlways, 30, testguest.ActionACPI)
	vm.Spec.Template.Spec.NodeSelector = map[string]string{"example.com/pool": pool}
	vw.createVM(t, vm)
	_, first := vw.waitVM(t, ns, "vm1", "Running on node A", bootTimeout, runningVM)
	if first.Status.NodeName != nodeA {
		t.Fatalf("the first VMI runs on %q, want node A %s", first.Status.NodeName, nodeA)
	}
	waitConsole(t, dirA, ns, "vm1", testguest.ShellMarker, bootTimeout)
	// B comes up once the VMI is A's.
	vw.startNode(t, nodeB, dirB, "-claim", "-node-labels", "example.com/pool="+pool, "-heartbeat-interval", "1s",
		"-libvirt-uri", uriB)

	// A dies: its agent killed, its guest destroyed (the domain stays
	// defined, as on a host that lost power).
	a.stop(t, os.Kill)
	if out, err := exec.Command("virsh", "-c", libvirtURI, "destroy", domainName(ns, "vm1")).CombinedOutput(); err != nil {
		t.Fatalf("virsh destroy: %v\n%s", err, out)
	}
	died := time.Now()
	replaced := vw.waitVMI(t, ns, "vm1", "replaced and bound to node B", grace+time.Minute, func(vmi *virtv1.VirtualMachineInstance) bool {
		return vmi != nil && vmi.UID != first.UID && vmi.Labels[virtv1.NodeNameLabel] == nodeB
	})
	toBound := time.Since(died)
	_, second := vw.waitVM(t, ns, "vm1", "Running on node B", bootTimeout, func(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) bool {
		return runningVM(vm, vmi) && vmi.UID == replaced.UID
	})
	toRunning := time.Since(died)
	t.Logf("node A dead → new VMI bound to node B: %s, → Running on B: %s (grace period %s)",
		toBound.Round(time.Millisecond), toRunning.Round(time.Millisecond), grace)
	if toRunning > grace+10*time.Second {
		t.Errorf("the new VMI Running on node B %s after node A died, want within the grace period + 10 s", toRunning)
	}
	if second.Status.NodeName != nodeB {
		t.Errorf("the new VMI runs on %q, want node B %s", second.Status.NodeName, nodeB)
	}
	if !log.seen(first.UID, virtv1.Failed) {
		t.Errorf("the first VMI was seen in phases %v, want Failed", log.phasesOf(first.UID))
	}
	if ev := vw.events(t, ns, first.UID); ev[nodeapi.NodeUnresponsiveReason] == 0 {
		t.Errorf("the first VMI's Events %v, want NodeUnresponsive", ev)
	}
	vw.waitNode(t, nodeA, "unschedulable", 10*time.Second, schedulable("false"))
	if exists, _, owner := vw.domain(t, ns, "vm1"); !exists || owner != nodeA {
		t.Fatalf("node A's stale domain exists %t, owned by %q, want it defined, node A's", exists, owner)
	}

	// A comes back: its stale domain goes before anything else.
	a = startA()
	a.waitFor(context.Background(), t, "stale domain destroyed and removed")
	if exists, _, _ := vw.domain(t, ns, "vm1"); exists {
		t.Errorf("node A's stale domain still defined after A came back")
	}
	if exists, id, owner := domainOn(t, connB, ns, "vm1"); !exists || id < 0 || owner != nodeB {
		t.Errorf("node B's domain exists %t, id %d, owned by %q, want it running, node B's", exists, id, owner)
	}
	if _, err := os.Stat(stateFolder(dirA, ns, "vm1")); !os.IsNotExist(err) {
		t.Errorf("node A's state folder of the VMI: %v, want it removed", err)
	}
	if got := log.created(); len(got) != 2 {
		t.Errorf("VMIs created %v, want the first and its replacement", got)
	}
	waitConsole(t, dirB, ns, "vm1", testguest.ShellMarker, bootTimeout)
	vw.setStrategy(t, ns, "vm1", virtv1.RunStrategyHalted)
	vw.waitVM(t, ns, "vm1", "Stopped", 2*time.Minute, stoppedVM)
	vw.deleteVM(t, ns, "vm1")
	if exists, _, _ := domainOn(t, connB, ns, "vm1"); exists {
		t.Errorf("node B's domain still defined after the VM was deleted")
	}
}

// schedulable: the Node's kubevirt.io/schedulable label is want.
func schedulable(want string) func(*k8sv1.Node) bool {
	return func(n *k8sv1.Node) bool { return n.Labels[virtv1.NodeSchedulable] == want }
}

// waitNode polls the Node until ok holds and returns it.
func (w *world) waitNode(t testing.TB, name, what string, timeout time.Duration, ok func(*k8sv1.Node) bool) *k8sv1.Node {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var n k8sv1.Node
		err := w.client.Get(context.Background(), types.NamespacedName{Name: name}, &n)
		if err == nil && ok(&n) {
			return &n
		}
		if time.Now().After(deadline) {
			t.Fatalf("Node %s not %s within %s: %v; labels %v annotations %v", name, what, timeout, err, n.Labels, n.Annotations)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// socketProxy forwards a Unix socket of its own to target, until cut:
// then its listener and every connection close, and nothing answers at
// its path until restore.
type socketProxy struct {
	path, target string
	mu           sync.Mutex
	ln           net.Listener
	conns        map[net.Conn]bool
}

// startSocketProxy listens in a folder of the test; it stops at the end.
func startSocketProxy(t testing.TB, target string) *socketProxy {
	t.Helper()
	p := &socketProxy{path: filepath.Join(t.TempDir(), "sock"), target: target, conns: map[net.Conn]bool{}}
	p.restore(t)
	t.Cleanup(p.cut)
	return p
}

// restore listens again.
func (p *socketProxy) restore(t testing.TB) {
	t.Helper()
	_ = os.Remove(p.path)
	ln, err := net.Listen("unix", p.path)
	if err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(c)
		}
	}()
}

// forward copies between c and a new connection to the target.
func (p *socketProxy) forward(c net.Conn) {
	up, err := net.Dial("unix", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[up] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	c.Close()
	up.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}

// cut closes the listener and every connection.
func (p *socketProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	_ = os.Remove(p.path)
}
