package main

// Helpers of the end-to-end tests: a real kube-apiserver and etcd
// (internal/testcluster), the real libvirtd (qemu:///system), and the node
// agent as the separate process a person starts (this test binary running
// main). Guests are the test guest of internal/testguest, under
// emulation. Every test uses namespaces and node names of its own, so that
// domain names (<namespace>_<name>) and owners never collide with other
// tests on the same libvirtd.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/agent"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/testcluster"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

const (
	libvirtURI = "qemu:///system"
	// stateRoot holds the agents' state folders during tests; QEMU must
	// be able to walk into it, so it is not a 0700 temporary folder.
	stateRoot = "/var/lib/vmi2libvirt/e2e-nodeagent"
)

// runMainEnv makes the test binary run main() instead of the tests, so a
// test runs the agent as the separate process a person starts.
const runMainEnv = "NODEAGENT_TEST_RUN_MAIN"

// hostFactsEnv holds, as JSON, the convert.HostFacts an agent started by
// a test makes its Node's labels of (testHostFacts) instead of its host's.
const hostFactsEnv = "NODEAGENT_TEST_HOST_FACTS"

// world is what the end-to-end tests run against: a test cluster, a client
// of it, and a libvirt connection of the test's own (the witness).
type world struct {
	cluster *testcluster.Cluster
	client  client.Client
	conn    *libvirt.Connect
}

var guestOnce sync.Once

// newWorld needs libvirtd and the test guest's image (skipped without
// them, failed under CI), holds the shared libvirt test lock, and starts a
// test cluster.
func newWorld(t testing.TB) *world {
	t.Helper()
	hosttest.Root(t)
	hosttest.Libvirt(t, libvirtURI)
	hosttest.LockLibvirt(t, false)
	var guestErr error
	guestOnce.Do(func() { _, guestErr = testguest.Install(convert.DefaultImageStore, testguest.Options{}) })
	if guestErr != nil {
		hosttest.Missing(t, "the test guest cannot be built: %v", guestErr)
	}
	c := testcluster.Start(t)
	scheme, err := agent.NewScheme()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := libvirt.NewConnect(libvirtURI)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = conn.Close() })
	return &world{cluster: c, client: cl, conn: conn}
}

// names are a test's namespace and node names, unique to this process.
var nameCount atomic.Int64

// uniqueName returns base with this process's id and a counter: unique to
// this test run, short enough for a namespace and a node.
func uniqueName(base string) string {
	return fmt.Sprintf("%s-%d-%d", base, os.Getpid(), nameCount.Add(1))
}

// namespace creates a namespace of the test's own.
func (w *world) namespace(t testing.TB, base string) string {
	t.Helper()
	ns := &k8sv1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: uniqueName(base)}}
	if err := w.client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// stateDir makes a state folder for one node's agent, removed at the end.
func stateDir(t testing.TB) string {
	t.Helper()
	return hosttest.Dir(t, stateRoot, "node-")
}

// guestVMI is a VMI booting the test guest: 1 vCPU, 128Mi, the pod
// network, terminationGracePeriodSeconds grace, and the guest's action
// (testguest.ActionACPI, ActionIgnore, ActionPowerOff).
func guestVMI(ns, name string, grace int64, action string) *virtv1.VirtualMachineInstance {
	return &virtv1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: virtv1.VirtualMachineInstanceSpec{
			TerminationGracePeriodSeconds: &grace,
			Domain: virtv1.DomainSpec{
				Memory: &virtv1.Memory{Guest: resource.NewQuantity(128<<20, resource.BinarySI)},
				Firmware: &virtv1.Firmware{KernelBoot: &virtv1.KernelBoot{
					KernelArgs: testguest.KernelArgs + " " + action,
					Container: &virtv1.KernelBootContainer{
						Image:      testguest.Ref,
						KernelPath: testguest.KernelPath,
						InitrdPath: testguest.InitrdPath,
					},
				}},
			},
		},
	}
}

// bound labels vmi for node, as KubeVirt's scheduling does.
func bound(vmi *virtv1.VirtualMachineInstance, node string) *virtv1.VirtualMachineInstance {
	metav1.SetMetaDataLabel(&vmi.ObjectMeta, virtv1.NodeNameLabel, node)
	return vmi
}

// create creates vmi in the API server.
func (w *world) create(t testing.TB, vmi *virtv1.VirtualMachineInstance) {
	t.Helper()
	if err := w.client.Create(context.Background(), vmi); err != nil {
		t.Fatalf("create VMI %s: %v", vmi.Name, err)
	}
}

// get reads a VMI from the API server; nil when it is gone.
func (w *world) get(t testing.TB, ns, name string) *virtv1.VirtualMachineInstance {
	t.Helper()
	var vmi virtv1.VirtualMachineInstance
	err := w.client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &vmi)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("get VMI %s/%s: %v", ns, name, err)
	}
	return &vmi
}

// waitVMI polls the API server until the VMI satisfies ok (nil: gone),
// and returns it; it fails the test after timeout, with what it saw last.
func (w *world) waitVMI(t testing.TB, ns, name, what string, timeout time.Duration, ok func(*virtv1.VirtualMachineInstance) bool) *virtv1.VirtualMachineInstance {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		vmi := w.get(t, ns, name)
		if ok(vmi) {
			return vmi
		}
		if time.Now().After(deadline) {
			t.Fatalf("VMI %s/%s: not %s within %s; last seen: %s", ns, name, what, timeout, describe(vmi))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitPhase waits until the VMI is in phase p.
func (w *world) waitPhase(t testing.TB, ns, name string, p virtv1.VirtualMachineInstancePhase, timeout time.Duration) *virtv1.VirtualMachineInstance {
	t.Helper()
	return w.waitVMI(t, ns, name, "in phase "+string(p), timeout, func(v *virtv1.VirtualMachineInstance) bool {
		return v != nil && v.Status.Phase == p
	})
}

// waitReady waits until the VMI is Running with its Ready condition True
// (libvirt has started its vCPUs).
func (w *world) waitReady(t testing.TB, ns, name string, timeout time.Duration) *virtv1.VirtualMachineInstance {
	t.Helper()
	return w.waitVMI(t, ns, name, "Running and Ready", timeout, func(v *virtv1.VirtualMachineInstance) bool {
		return v != nil && v.Status.Phase == virtv1.Running && conditionStatus(v, virtv1.VirtualMachineInstanceReady) == k8sv1.ConditionTrue
	})
}

// waitGone waits until the VMI object is gone.
func (w *world) waitGone(t testing.TB, ns, name string, timeout time.Duration) {
	t.Helper()
	w.waitVMI(t, ns, name, "gone", timeout, func(v *virtv1.VirtualMachineInstance) bool { return v == nil })
}

// describe sums a VMI up for a failure message.
func describe(vmi *virtv1.VirtualMachineInstance) string {
	if vmi == nil {
		return "no object"
	}
	s := fmt.Sprintf("phase %q reason %q node label %q finalizers %v deleting %v", vmi.Status.Phase, vmi.Status.Reason,
		vmi.Labels[virtv1.NodeNameLabel], vmi.Finalizers, vmi.DeletionTimestamp != nil)
	for _, c := range vmi.Status.Conditions {
		s += fmt.Sprintf("; %s=%s %s %s", c.Type, c.Status, c.Reason, c.Message)
	}
	return s
}

// condition returns the VMI's condition of type typ, or nil.
func condition(vmi *virtv1.VirtualMachineInstance, typ virtv1.VirtualMachineInstanceConditionType) *virtv1.VirtualMachineInstanceCondition {
	for i := range vmi.Status.Conditions {
		if vmi.Status.Conditions[i].Type == typ {
			return &vmi.Status.Conditions[i]
		}
	}
	return nil
}

func conditionStatus(vmi *virtv1.VirtualMachineInstance, typ virtv1.VirtualMachineInstanceConditionType) k8sv1.ConditionStatus {
	if c := condition(vmi, typ); c != nil {
		return c.Status
	}
	return ""
}

// transition returns when the VMI entered phase p (zero when it did not).
func transition(vmi *virtv1.VirtualMachineInstance, p virtv1.VirtualMachineInstancePhase) time.Time {
	for _, t := range vmi.Status.PhaseTransitionTimestamps {
		if t.Phase == p {
			return t.PhaseTransitionTimestamp.Time
		}
	}
	return time.Time{}
}

// events returns the Events recorded on the object with uid, by reason,
// with their counts summed (the recorder aggregates repeated Events).
func (w *world) events(t testing.TB, ns string, uid types.UID) map[string]int {
	t.Helper()
	var list k8sv1.EventList
	err := w.client.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("involvedObject.uid", string(uid))})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range list.Items {
		out[e.Reason] += int(max(e.Count, 1))
	}
	return out
}

// eventList returns the Events recorded on the object with uid.
func (w *world) eventList(t testing.TB, ns string, uid types.UID) []k8sv1.Event {
	t.Helper()
	var list k8sv1.EventList
	err := w.client.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("involvedObject.uid", string(uid))})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// waitEvent waits until the object with uid has an Event with reason.
func (w *world) waitEvent(t testing.TB, ns string, uid types.UID, reason string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for w.events(t, ns, uid)[reason] == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no %s Event on %s within %s; Events: %v", reason, uid, timeout, w.events(t, ns, uid))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// domainName is the libvirt name of the VMI's domain.
func domainName(ns, name string) string { return ns + "_" + name }

// domain returns whether the domain exists, its ID (-1 when it is not
// running), and its launcher metadata's owner.
func (w *world) domain(t testing.TB, ns, name string) (exists bool, id int, owner string) {
	t.Helper()
	return domainOn(t, w.conn, ns, name)
}

// domainOn is world.domain on the libvirt of conn (another node's).
func domainOn(t testing.TB, conn *libvirt.Connect, ns, name string) (exists bool, id int, owner string) {
	t.Helper()
	dom, err := conn.LookupDomainByName(domainName(ns, name))
	var lerr libvirt.Error
	if errors.As(err, &lerr) && lerr.Code == libvirt.ERR_NO_DOMAIN {
		return false, -1, ""
	}
	if err != nil {
		t.Fatal(err)
	}
	defer dom.Free()
	id = -1
	if n, err := dom.GetID(); err == nil {
		id = int(n)
	}
	meta, err := dom.GetMetadata(libvirt.DOMAIN_METADATA_ELEMENT, "https://github.com/vmi2libvirt/vmi2libvirt/launcher", libvirt.DOMAIN_AFFECT_CONFIG)
	if err == nil {
		if _, rest, ok := strings.Cut(meta, "<owner>"); ok {
			owner, _, _ = strings.Cut(rest, "</owner>")
		}
	}
	return true, id, owner
}

// removeDomainsOf destroys and undefines the domains owned by node that
// are still defined when a test ends. A test that passed left none: any
// found fails it.
func (w *world) removeDomainsOf(t testing.TB, node string) {
	doms, err := w.conn.ListAllDomains(0)
	if err != nil {
		t.Errorf("cleanup: list domains: %v", err)
		return
	}
	for i := range doms {
		dom := &doms[i]
		name, _ := dom.GetName()
		meta, _ := dom.GetMetadata(libvirt.DOMAIN_METADATA_ELEMENT, "https://github.com/vmi2libvirt/vmi2libvirt/launcher", libvirt.DOMAIN_AFFECT_CONFIG)
		if strings.Contains(meta, "<owner>"+node+"</owner>") {
			if !t.Failed() {
				t.Errorf("domain %s of node %s left behind", name, node)
			}
			_ = dom.Destroy()
			if err := dom.UndefineFlags(libvirt.DOMAIN_UNDEFINE_NVRAM); err != nil {
				t.Errorf("cleanup: undefine %s: %v", name, err)
			}
		}
		_ = dom.Free()
	}
}

// serialLog is the guest's serial console so far, in the agent's state
// folder.
func serialLog(stateDir, ns, name string) string {
	layout := convert.HostLayout{StateDir: stateDir}
	b, _ := os.ReadFile(layout.Paths(&virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}).SerialLog)
	return string(b)
}

// waitConsole waits until the guest's console holds text.
func waitConsole(t testing.TB, stateDir, ns, name, text string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(serialLog(stateDir, ns, name), text) {
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s did not print %q within %s; console:\n%s", ns, name, text, timeout, serialLog(stateDir, ns, name))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// stateFolder is the VMI's state folder below an agent's state folder.
func stateFolder(stateDir, ns, name string) string {
	return filepath.Join(stateDir, domainName(ns, name))
}

// agentProcess is the node agent running as a child process (the test
// binary running main), with its stderr collected line by line.
type agentProcess struct {
	*testcluster.Process
	node    string
	metrics string // base URL of its metrics and health, once known
}

// startAgent starts the agent with args; it is killed at the end of the
// test if still running.
func startAgent(t testing.TB, args ...string) *agentProcess {
	t.Helper()
	return startAgentEnv(t, nil, args...)
}

// startAgentEnv starts the agent with args and env added to the test's
// environment.
func startAgentEnv(t testing.TB, env []string, args ...string) *agentProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), runMainEnv+"=1"), env...)
	a := &agentProcess{}
	for i, arg := range args {
		if arg == "-node" && i+1 < len(args) {
			a.node = args[i+1]
		}
	}
	a.Process = testcluster.StartProcess(t, "agent "+a.node, cmd)
	return a
}

// startNode starts the agent of node with a state folder and its metrics
// on a free loopback port, plus extra flags; it waits until the agent has
// swept the launcher's domains (it then watches its VMIs).
func (w *world) startNode(t testing.TB, node, stateDir string, extra ...string) *agentProcess {
	t.Helper()
	return w.startNodeEnv(t, nil, node, stateDir, extra...)
}

// startNodeEnv is startNode with env added to the agent's environment.
func (w *world) startNodeEnv(t testing.TB, env []string, node, stateDir string, extra ...string) *agentProcess {
	t.Helper()
	t.Cleanup(func() { w.removeDomainsOf(t, node) })
	args := append([]string{"-kubeconfig", w.cluster.Kubeconfig, "-node", node, "-emulate",
		"-state-dir", stateDir, "-metrics-address", "127.0.0.1:0"}, extra...)
	a := startAgentEnv(t, env, args...)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a.metrics = "http://" + a.Address(ctx, t, "nodeagent: serving metrics and health")
	a.waitFor(ctx, t, "nodeagent: watching VMIs")
	return a
}

// waitFor returns the first line of the agent's stderr that holds text.
func (a *agentProcess) waitFor(ctx context.Context, t testing.TB, text string) string {
	t.Helper()
	return a.WaitFor(ctx, t, text)
}

// stop sends the agent sig and waits for it to exit; SIGTERM must end it
// with status 0.
func (a *agentProcess) stop(t testing.TB, sig os.Signal) {
	t.Helper()
	a.Stop(t, sig)
}

// wait waits for the agent to exit and returns cmd.Wait's error.
func (a *agentProcess) wait(ctx context.Context) error { return a.Wait(ctx) }

// output is everything the agent printed on stderr so far.
func (a *agentProcess) output() string { return a.Output() }

// get fetches path from the agent's metrics and health server.
func (a *agentProcess) get(t testing.TB, path string) (int, string) {
	t.Helper()
	resp, err := http.Get(a.metrics + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// metric returns the sum of the samples of metric name whose labels
// include every label of want (`phase="running"`...), from the agent's
// /metrics.
func (a *agentProcess) metric(t testing.TB, name string, want ...string) float64 {
	t.Helper()
	code, body := a.get(t, "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	sum := 0.0
	for _, line := range strings.Split(body, "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		metric, labels, _ := strings.Cut(series, "{")
		if metric != name {
			continue
		}
		all := true
		for _, l := range want {
			all = all && strings.Contains(labels, l)
		}
		if !all {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum += v
	}
	return sum
}

// reconciles is how many times the agent's VMI controller (the one that
// syncs the domain) reconciled. The status, streams and migration
// controllers watch the same objects and are not counted: a change of a
// VMI wakes each of them once.
func (a *agentProcess) reconciles(t testing.TB) float64 {
	return a.metric(t, "controller_runtime_reconcile_total", `controller="vmi"`)
}
