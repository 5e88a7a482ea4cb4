package main

// Helpers of the end-to-end tests of VirtualMachines: the control plane
// (internal/testcluster's, a process of its own with its webhooks), one
// node agent that claims the VMIs whose template selects its node, and a
// record of every VMI the API server created.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/testcluster"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// vmWorld is a world with the control plane and one node agent that claims
// VMIs.
type vmWorld struct {
	*world
	cp    *testcluster.ControlPlane
	agent *agentProcess
	node  string
	dir   string // the agent's state folder
}

// newVMWorld starts the cluster, the control plane with its webhooks and
// an agent with -claim.
func newVMWorld(t *testing.T) *vmWorld {
	w := &vmWorld{world: newWorld(t), node: uniqueName("node"), dir: stateDir(t)}
	w.cp = w.cluster.StartControlPlane(t)
	w.agent = w.startNode(t, w.node, w.dir, "-claim")
	return w
}

// guestVM is a VM whose template is guestVMI's (the test guest with
// action) and selects the agent's node, with run strategy strategy.
func (w *vmWorld) guestVM(ns, name string, strategy virtv1.VirtualMachineRunStrategy, grace int64, action string) *virtv1.VirtualMachine {
	return vmOf(guestVMI(ns, name, grace, action), w.node, strategy)
}

// vmOf is a VM named as vmi, with run strategy strategy, whose template
// is vmi's spec selecting node.
func vmOf(vmi *virtv1.VirtualMachineInstance, node string, strategy virtv1.VirtualMachineRunStrategy) *virtv1.VirtualMachine {
	vmi.Spec.NodeSelector = map[string]string{k8sv1.LabelHostname: node}
	return &virtv1.VirtualMachine{
		TypeMeta:   metav1.TypeMeta{APIVersion: "kubevirt.io/v1", Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{Namespace: vmi.Namespace, Name: vmi.Name},
		Spec: virtv1.VirtualMachineSpec{
			RunStrategy: &strategy,
			Template: &virtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"kubevirt.io/vm": vmi.Name}},
				Spec:       vmi.Spec,
			},
		},
	}
}

// createVM creates vm.
func (w *vmWorld) createVM(t testing.TB, vm *virtv1.VirtualMachine) {
	t.Helper()
	if err := w.client.Create(context.Background(), vm); err != nil {
		t.Fatalf("create VM %s: %v", vm.Name, err)
	}
}

// applyYAML writes obj as YAML and runs kubectl apply -f of it.
func (w *vmWorld) applyYAML(t testing.TB, obj any) (stdout, stderr string, err error) {
	t.Helper()
	data, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "obj.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return w.cluster.Kubectl(context.Background(), "apply", "-f", path)
}

// getVM reads a VM; nil when it is gone.
func (w *vmWorld) getVM(t testing.TB, ns, name string) *virtv1.VirtualMachine {
	t.Helper()
	var vm virtv1.VirtualMachine
	err := w.client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &vm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		t.Fatalf("get VM %s/%s: %v", ns, name, err)
	}
	return &vm
}

// waitVM polls the VM and its VMI until ok holds and returns both; it
// fails the test after timeout, with what it saw last.
func (w *vmWorld) waitVM(t testing.TB, ns, name, what string, timeout time.Duration, ok func(*virtv1.VirtualMachine, *virtv1.VirtualMachineInstance) bool) (*virtv1.VirtualMachine, *virtv1.VirtualMachineInstance) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		vm, vmi := w.getVM(t, ns, name), w.get(t, ns, name)
		if vm != nil && ok(vm, vmi) {
			return vm, vmi
		}
		if time.Now().After(deadline) {
			t.Fatalf("VM %s/%s: not %s within %s; VM %s; VMI %s", ns, name, what, timeout, describeVM(vm), describe(vmi))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// describeVM sums a VM up for a failure message.
func describeVM(vm *virtv1.VirtualMachine) string {
	if vm == nil {
		return "no object"
	}
	s := fmt.Sprintf("printableStatus %q created %t ready %t requests %+v startFailure %+v", vm.Status.PrintableStatus,
		vm.Status.Created, vm.Status.Ready, vm.Status.StateChangeRequests, vm.Status.StartFailure)
	for _, c := range vm.Status.Conditions {
		s += fmt.Sprintf("; %s=%s %s %s", c.Type, c.Status, c.Reason, c.Message)
	}
	return s
}

// runningVM: the VM is Running, ready, and its VMI is Running and Ready.
func runningVM(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) bool {
	return vm.Status.PrintableStatus == virtv1.VirtualMachineStatusRunning && vm.Status.Ready && vmi != nil &&
		vmi.Status.Phase == virtv1.Running && conditionStatus(vmi, virtv1.VirtualMachineInstanceReady) == k8sv1.ConditionTrue
}

// stoppedVM: the VM is Stopped and has no VMI.
func stoppedVM(vm *virtv1.VirtualMachine, vmi *virtv1.VirtualMachineInstance) bool {
	return vm.Status.PrintableStatus == virtv1.VirtualMachineStatusStopped && vmi == nil && !vm.Status.Created
}

// setStrategy changes the VM's run strategy, as `kubectl patch` does.
func (w *vmWorld) setStrategy(t testing.TB, ns, name string, strategy virtv1.VirtualMachineRunStrategy) {
	t.Helper()
	w.patchVM(t, ns, name, fmt.Sprintf(`{"spec":{"runStrategy":%q}}`, strategy), false)
}

// requestStates writes the VM's status.stateChangeRequests as virt-api's
// start, stop and restart do: stop names the VMI to stop by its UID.
func (w *vmWorld) requestStates(t testing.TB, ns, name string, requests ...virtv1.VirtualMachineStateChangeRequest) {
	t.Helper()
	p, err := yaml.YAMLToJSON(mustYAML(t, map[string]any{"status": map[string]any{"stateChangeRequests": requests}}))
	if err != nil {
		t.Fatal(err)
	}
	w.patchVM(t, ns, name, string(p), true)
}

func mustYAML(t testing.TB, v any) []byte {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// stopRequest and startRequest are virt-api's requests.
func stopRequest(uid types.UID) virtv1.VirtualMachineStateChangeRequest {
	return virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StopRequest, UID: &uid}
}

var startRequest = virtv1.VirtualMachineStateChangeRequest{Action: virtv1.StartRequest}

// patchVM merge-patches the VM, or its status.
func (w *vmWorld) patchVM(t testing.TB, ns, name, patch string, status bool) {
	t.Helper()
	vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	p := client.RawPatch(types.MergePatchType, []byte(patch))
	var err error
	if status {
		err = w.client.Status().Patch(context.Background(), vm, p)
	} else {
		err = w.client.Patch(context.Background(), vm, p)
	}
	if err != nil {
		t.Fatalf("patch VM %s with %s: %v", name, patch, err)
	}
}

// deleteVM deletes the VM and waits until it and its VMI are gone.
func (w *vmWorld) deleteVM(t testing.TB, ns, name string) {
	t.Helper()
	vm := &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := w.client.Delete(context.Background(), vm); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for w.getVM(t, ns, name) != nil || w.get(t, ns, name) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("VM %s/%s or its VMI still there 2 minutes after its deletion: VM %s; VMI %s", ns, name, describeVM(w.getVM(t, ns, name)), describe(w.get(t, ns, name)))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// killQEMU kills the QEMU process of the VMI's domain with SIGKILL.
func killQEMU(t testing.TB, ns, name string) {
	t.Helper()
	pidFile := "/run/libvirt/qemu/" + domainName(ns, name) + ".pid"
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("QEMU pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 1 {
		t.Fatalf("QEMU pid file %s holds %q", pidFile, raw)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill QEMU %d: %v", pid, err)
	}
}

// vmiLog records every VMI of a namespace that the API server created, in
// order, with the phases each was seen in, from a watch: what the
// controllers did, whatever the polling of the test saw.
type vmiLog struct {
	mu     sync.Mutex
	uids   []types.UID
	phases map[types.UID][]virtv1.VirtualMachineInstancePhase
}

// recordVMIs starts recording the VMIs of ns until the test ends.
func (w *vmWorld) recordVMIs(t testing.TB, ns string) *vmiLog {
	t.Helper()
	wc, err := client.NewWithWatch(w.cluster.Config, client.Options{Scheme: w.client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	watcher, err := wc.Watch(ctx, &virtv1.VirtualMachineInstanceList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	l := &vmiLog{phases: map[types.UID][]virtv1.VirtualMachineInstancePhase{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range watcher.ResultChan() {
			vmi, ok := ev.Object.(*virtv1.VirtualMachineInstance)
			if !ok || ev.Type == watch.Error {
				continue
			}
			l.mu.Lock()
			if _, seen := l.phases[vmi.UID]; !seen {
				l.uids = append(l.uids, vmi.UID)
				l.phases[vmi.UID] = nil
			}
			if p := vmi.Status.Phase; p != "" && !slices.Contains(l.phases[vmi.UID], p) {
				l.phases[vmi.UID] = append(l.phases[vmi.UID], p)
			}
			l.mu.Unlock()
		}
	}()
	t.Cleanup(func() { watcher.Stop(); cancel(); <-done })
	return l
}

// created returns the UIDs of the VMIs created so far, in order.
func (l *vmiLog) created() []types.UID {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.uids)
}

// seen tells whether the VMI uid was seen in phase p.
func (l *vmiLog) seen(uid types.UID, p virtv1.VirtualMachineInstancePhase) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.phases[uid], p)
}

// ran tells whether the VMI uid was seen Running.
func (l *vmiLog) ran(uid types.UID) bool { return l.seen(uid, virtv1.Running) }

// phasesOf returns the phases the VMI uid was seen in, in order.
func (l *vmiLog) phasesOf(uid types.UID) []virtv1.VirtualMachineInstancePhase {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.phases[uid])
}

// waitCreated waits until n VMIs were created and returns their UIDs.
func (l *vmiLog) waitCreated(t testing.TB, n int, timeout time.Duration) []types.UID {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for len(l.created()) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d VMIs created within %s, want %d", len(l.created()), timeout, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return l.created()
}

// boots counts the test guest's boots in the serial log of the VMI's
// current guest (its state folder goes with each VMI).
func (w *vmWorld) boots(ns, name string) int {
	return strings.Count(serialLog(w.dir, ns, name), testguest.BeginMarker)
}

// vmEvents returns the Events of the VM by reason.
func (w *vmWorld) vmEvents(t testing.TB, vm *virtv1.VirtualMachine) map[string]int {
	t.Helper()
	return w.events(t, vm.Namespace, vm.UID)
}
