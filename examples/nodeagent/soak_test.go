package main

// TestSoak: a workload of VMIs and VMs driven through the real API server
// across two agents and the control plane, while faults are injected at
// instants drawn from a seed; afterwards (faults stopped, a settle time)
// it checks invariants over the whole history. Rerun a failure with
// -soak.seed N (printed at the start).

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
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
	virtv1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

var (
	soakDuration = flag.Duration("soak.duration", 90*time.Second, "how long TestSoak injects faults under its workload")
	soakSeed     = flag.Uint64("soak.seed", 27, "the seed of TestSoak's workload and fault instants")
	soakSettle   = flag.Duration("soak.settle", 4*time.Minute, "how long TestSoak waits, faults stopped, for everything to converge")
)

// soakMaxLive bounds the objects alive at once (2 shared cores, emulated
// guests).
const soakMaxLive = 4

// soakObject is one VMI or VM of the workload and what the operations
// the workload saw succeed leave it as.
type soakObject struct {
	name    string
	vm      bool
	exists  bool // not deleted (as far as the workload saw)
	running bool // VMs: runStrategy Always, else Halted
	// uncertain is the kind of the last operation on it that failed as
	// the workload saw it (it may have happened anyway); "" when none.
	uncertain string
}

// soakPending is an operation that succeeded, waiting for its object to
// reach what it asked for; its convergence time is recorded then.
type soakPending struct {
	name  string
	since time.Time
	done  func() bool
}

// soak is the state of one run.
type soak struct {
	vw    *vmWorld
	ns    string
	pool  string
	nodes []string
	dirs  []string

	mu        sync.Mutex
	objects   map[string]*soakObject
	pending   []soakPending
	converged []time.Duration
	ops       map[string]int // succeeded operations by kind
	opErrors  map[string]int // failed operations by kind (faults make some fail)
	lastError map[string]string
	faults    map[string]int
	qemuKills map[types.UID]bool // VMIs whose QEMU the soak killed: Failed is their truth

	// Samples of libvirt: per VMI UID, the distinct domain IDs it ran
	// as and the distinct Started marks; violations seen in a sample.
	ids        map[types.UID]map[int]bool
	starts     map[types.UID]map[time.Time]bool
	violations []string
}

func TestSoak(t *testing.T) {
	seed := *soakSeed
	t.Logf("soak: seed %d, duration %s, settle %s (rerun: go test -run TestSoak -soak.seed %d -soak.duration %s)", seed, *soakDuration, *soakSettle, seed, *soakDuration)
	vw := &vmWorld{world: newWorld(t)}
	vw.cp = vw.cluster.StartControlPlane(t)
	s := &soak{
		vw: vw, ns: vw.namespace(t, "soak"), pool: uniqueName("pool"),
		nodes:   []string{uniqueName("node"), uniqueName("node")},
		dirs:    []string{stateDir(t), stateDir(t)},
		objects: map[string]*soakObject{}, ops: map[string]int{}, opErrors: map[string]int{}, lastError: map[string]string{}, faults: map[string]int{},
		qemuKills: map[types.UID]bool{}, ids: map[types.UID]map[int]bool{}, starts: map[types.UID]map[time.Time]bool{},
	}
	agents := []*agentProcess{s.startAgent(t, 0), s.startAgent(t, 1)}

	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); s.sample(ctx) }()
	go func() { defer wg.Done(); s.watchConvergence(ctx) }()
	workCtx, stopWork := context.WithCancel(ctx)
	workDone := make(chan struct{})
	go func() { defer wg.Done(); defer close(workDone); s.work(workCtx, rand.New(rand.NewPCG(seed, 1))) }()

	// Faults, from this goroutine (they may fail the test).
	frng := rand.New(rand.NewPCG(seed, 2))
	end := time.Now().Add(*soakDuration)
	// restart stops a server of the cluster, waits up to 3 s, starts it.
	restart := func(fault string, stop, start func() error) {
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(frng.IntN(3000)) * time.Millisecond)
		if err := start(); err != nil {
			t.Fatal(err)
		}
		s.count(fault)
	}
	var round []int
	for time.Now().Before(end) {
		time.Sleep(time.Duration(4+frng.IntN(8)) * time.Second)
		// Each kind once per round, in an order of the seed: a short run
		// still injects all of them.
		if len(round) == 0 {
			round = frng.Perm(5)
		}
		k := round[0]
		round = round[1:]
		switch k {
		case 0:
			i := frng.IntN(2)
			agents[i].stop(t, os.Kill)
			time.Sleep(time.Duration(frng.IntN(6000)) * time.Millisecond)
			agents[i] = s.startAgent(t, i)
			s.count("agent SIGKILL")
		case 1:
			vw.cp.Stop(t, os.Kill)
			time.Sleep(time.Duration(frng.IntN(4000)) * time.Millisecond)
			vw.cp.Restart(t)
			s.count("control plane SIGKILL")
		case 2:
			if s.killQEMU(frng) {
				s.count("QEMU SIGKILL")
			}
		case 3:
			restart("kube-apiserver restart", vw.cluster.StopAPIServer, vw.cluster.StartAPIServer)
		case 4:
			restart("etcd restart", vw.cluster.StopEtcd, vw.cluster.StartEtcd)
		}
	}
	stopWork()
	<-workDone
	faultsEnd := time.Now()
	t.Logf("soak: faults stopped; settling (up to %s)", *soakSettle)

	var last []string
	deadline := time.Now().Add(*soakSettle)
	for {
		last = s.divergences(t)
		if len(last) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	settled := time.Since(faultsEnd)
	stop()
	wg.Wait()

	s.report(t, settled, len(last) == 0)
	// The processes' output first and the verdict last: a log cut to its
	// tail (as CI's is) still shows why the soak failed.
	if len(s.violations) > 0 || len(last) > 0 {
		for i, a := range agents {
			t.Logf("agent %s output:\n%s", s.nodes[i], tail(a.output(), 60))
		}
		t.Logf("control plane output:\n%s", tail(vw.cp.Output(), 40))
	}
	for _, v := range s.violations {
		t.Errorf("soak (seed %d): %s", seed, v)
	}
	for _, d := range last {
		t.Errorf("soak (seed %d): not converged %s after the faults stopped: %s", seed, settled.Round(time.Second), d)
	}
	// Clean up what is left, for the next run on the same libvirtd.
	for _, o := range s.objectsCopy() {
		if o.exists {
			_ = s.delete(o)
		}
	}
	cleanup := time.Now().Add(2 * time.Minute)
	for s.countLive() > 0 && time.Now().Before(cleanup) {
		time.Sleep(time.Second)
	}
}

// startAgent starts the agent of node i, claiming VMs of the soak's pool.
func (s *soak) startAgent(t *testing.T, i int) *agentProcess {
	return s.vw.startNode(t, s.nodes[i], s.dirs[i], "-claim", "-node-labels", "example.com/pool="+s.pool, "-heartbeat-interval", "1s")
}

func (s *soak) count(fault string) {
	s.mu.Lock()
	s.faults[fault]++
	s.mu.Unlock()
}

func (s *soak) objectsCopy() []soakObject {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []soakObject
	for _, o := range s.objects {
		out = append(out, *o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// work runs operations at random until ctx ends.
func (s *soak) work(ctx context.Context, rng *rand.Rand) {
	n := 0
	for ctx.Err() == nil {
		time.Sleep(time.Duration(500+rng.IntN(2500)) * time.Millisecond)
		objs := s.objectsCopy()
		var live []soakObject
		for _, o := range objs {
			if o.exists {
				live = append(live, o)
			}
		}
		choice := rng.IntN(10)
		switch {
		case len(live) < soakMaxLive && (choice < 4 || len(live) == 0):
			n++
			o := &soakObject{name: fmt.Sprintf("o%d", n), vm: rng.IntN(2) == 0, exists: true, running: true}
			if o.vm && rng.IntN(3) == 0 {
				o.running = false
			}
			s.op("create", o, func() error { return s.create(o, rng.IntN(2)) })
		case choice < 7 && len(live) > 0:
			o := live[rng.IntN(len(live))]
			if !o.vm {
				s.op("delete VMI", &o, func() error { o.exists = false; return s.delete(o) })
				continue
			}
			o.running = !o.running
			s.op(map[bool]string{true: "start VM", false: "stop VM"}[o.running], &o, func() error {
				return s.vw.client.Patch(context.Background(), &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: o.name}},
					client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"runStrategy":%q}}`, strategyOf(o.running))))
			})
		case len(live) > 0:
			o := live[rng.IntN(len(live))]
			s.op(map[bool]string{true: "delete VM", false: "delete VMI"}[o.vm], &o, func() error { o.exists = false; return s.delete(o) })
		}
	}
}

func strategyOf(running bool) virtv1.VirtualMachineRunStrategy {
	if running {
		return virtv1.RunStrategyAlways
	}
	return virtv1.RunStrategyHalted
}

// op runs do; on success it records the object's new intent and waits
// for its convergence. A failed operation leaves the intent as it was
// (its effect may still be there: the object's truth is then uncertain,
// which the soak resolves by reading what the API server holds).
func (s *soak) op(kind string, o *soakObject, do func() error) {
	err := do()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.opErrors[kind]++
		s.lastError[kind+map[bool]string{true: " VM", false: " VMI"}[o.vm]] = err.Error()
		// The operation may have happened anyway: the object's intent is
		// learnt from the API server at the end (resolveUncertain).
		cur, ok := s.objects[o.name]
		if !ok {
			cur = &soakObject{name: o.name, vm: o.vm}
			s.objects[o.name] = cur
		}
		if !apierrors.IsAlreadyExists(err) {
			cur.uncertain = kind
		}
		return
	}
	s.ops[kind]++
	o.uncertain = ""
	s.objects[o.name] = o
	// A newer operation on the object supersedes the older's wait.
	s.pending = slices.DeleteFunc(s.pending, func(p soakPending) bool { return p.name == o.name })
	obj := *o
	s.pending = append(s.pending, soakPending{name: o.name, since: time.Now(), done: func() bool { return s.truth(obj) == "" }})
}

// create creates o on node i (a VMI selecting that node's host name, which
// its agent claims: KubeVirt's admission refuses a VMI created with the
// node label) or in the pool (a VM).
func (s *soak) create(o *soakObject, i int) error {
	paused := virtv1.StartStrategyPaused
	vmi := guestVMI(s.ns, o.name, 5, testguest.ActionACPI)
	vmi.Spec.StartStrategy = &paused
	if !o.vm {
		vmi.Spec.NodeSelector = map[string]string{k8sv1.LabelHostname: s.nodes[i]}
		return s.vw.client.Create(context.Background(), vmi)
	}
	vmi.Spec.NodeSelector = map[string]string{"example.com/pool": s.pool}
	strategy := strategyOf(o.running)
	return s.vw.client.Create(context.Background(), &virtv1.VirtualMachine{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: o.name},
		Spec: virtv1.VirtualMachineSpec{
			RunStrategy: &strategy,
			Template: &virtv1.VirtualMachineInstanceTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"kubevirt.io/vm": o.name}},
				Spec:       vmi.Spec,
			},
		},
	})
}

func (s *soak) delete(o soakObject) error {
	var obj client.Object = &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: o.name}}
	if o.vm {
		obj = &virtv1.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: o.name}}
	}
	err := s.vw.client.Delete(context.Background(), obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// truth compares o's intent with what the API server and libvirt hold:
// "" when they agree, else what differs.
func (s *soak) truth(o soakObject) string {
	ctx := context.Background()
	var vmi virtv1.VirtualMachineInstance
	vmiErr := s.vw.client.Get(ctx, types.NamespacedName{Namespace: s.ns, Name: o.name}, &vmi)
	if vmiErr != nil && !apierrors.IsNotFound(vmiErr) {
		return fmt.Sprintf("%s: get VMI: %v", o.name, vmiErr)
	}
	hasVMI := vmiErr == nil
	if o.vm {
		var vm virtv1.VirtualMachine
		err := s.vw.client.Get(ctx, types.NamespacedName{Namespace: s.ns, Name: o.name}, &vm)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Sprintf("%s: get VM: %v", o.name, err)
		}
		switch {
		case !o.exists && (err == nil || hasVMI):
			return fmt.Sprintf("VM %s deleted, still there (VM %s; VMI %s)", o.name, describeVM(&vm), describe(vmiOrNil(hasVMI, &vmi)))
		case !o.exists:
			return ""
		case err != nil:
			return fmt.Sprintf("VM %s gone, never deleted", o.name)
		case !o.running && (hasVMI || vm.Status.PrintableStatus != virtv1.VirtualMachineStatusStopped):
			return fmt.Sprintf("VM %s stopped: %s; VMI %s", o.name, describeVM(&vm), describe(vmiOrNil(hasVMI, &vmi)))
		case !o.running:
			return ""
		case !hasVMI || vm.Status.PrintableStatus != virtv1.VirtualMachineStatusPaused:
			// Its guest starts paused: printableStatus Paused, from its VMI.
			return fmt.Sprintf("VM %s started: %s; VMI %s", o.name, describeVM(&vm), describe(vmiOrNil(hasVMI, &vmi)))
		}
		return s.vmiTruth(&vmi, false)
	}
	switch {
	case !o.exists && hasVMI:
		return fmt.Sprintf("VMI %s deleted, still there: %s", o.name, describe(&vmi))
	case !o.exists:
		return ""
	case !hasVMI:
		return fmt.Sprintf("VMI %s gone, never deleted", o.name)
	}
	s.mu.Lock()
	killed := s.qemuKills[vmi.UID]
	s.mu.Unlock()
	return s.vmiTruth(&vmi, killed)
}

func vmiOrNil(ok bool, vmi *virtv1.VirtualMachineInstance) *virtv1.VirtualMachineInstance {
	if ok {
		return vmi
	}
	return nil
}

// vmiTruth: the VMI runs where its status says, its domain active there
// (or, its QEMU killed, it is Failed and has no running domain).
func (s *soak) vmiTruth(vmi *virtv1.VirtualMachineInstance, killed bool) string {
	if vmi.DeletionTimestamp != nil {
		return fmt.Sprintf("VMI %s Terminating: %s", vmi.Name, describe(vmi))
	}
	exists, id, owner := s.domainOf(vmi.Name)
	if killed && vmi.Status.Phase == virtv1.Failed {
		if exists && id >= 0 {
			return fmt.Sprintf("VMI %s Failed, its domain runs (ID %d)", vmi.Name, id)
		}
		return ""
	}
	switch {
	case vmi.Status.Phase != virtv1.Running:
		return fmt.Sprintf("VMI %s: %s, want Running", vmi.Name, describe(vmi))
	case !exists || id < 0:
		return fmt.Sprintf("VMI %s Running, its domain exists %t ID %d", vmi.Name, exists, id)
	case owner != vmi.Status.NodeName || owner != vmi.Labels[virtv1.NodeNameLabel]:
		return fmt.Sprintf("VMI %s nodeName %q label %q, its domain owned by %q", vmi.Name, vmi.Status.NodeName, vmi.Labels[virtv1.NodeNameLabel], owner)
	}
	return ""
}

// domainOf is world.domain without t (the soak's goroutines must not fail
// the test).
func (s *soak) domainOf(name string) (exists bool, id int, owner string) {
	dom, err := s.vw.conn.LookupDomainByName(domainName(s.ns, name))
	if err != nil {
		return false, -1, ""
	}
	defer dom.Free()
	id = -1
	if n, err := dom.GetID(); err == nil {
		id = int(n)
	}
	if m := marksOfDomain(dom); m != nil {
		owner = m.Owner
	}
	return true, id, owner
}

func marksOfDomain(dom *libvirt.Domain) *hostplan.Marks {
	meta, err := dom.GetMetadata(libvirt.DOMAIN_METADATA_ELEMENT, "https://github.com/vmi2libvirt/vmi2libvirt/launcher", libvirt.DOMAIN_AFFECT_CONFIG)
	if err != nil {
		return nil
	}
	m, err := hostplan.ParseMarks(meta)
	if err != nil {
		return nil
	}
	return m
}

// watchConvergence records, every 250 ms, the pending operations whose
// objects reached what they asked for.
func (s *soak) watchConvergence(ctx context.Context) {
	for ctx.Err() == nil {
		s.mu.Lock()
		pending := slices.Clone(s.pending)
		s.mu.Unlock()
		for _, p := range pending {
			if !p.done() {
				continue
			}
			s.mu.Lock()
			before := len(s.pending)
			s.pending = slices.DeleteFunc(s.pending, func(q soakPending) bool { return q.name == p.name && q.since.Equal(p.since) })
			if len(s.pending) < before {
				s.converged = append(s.converged, time.Since(p.since))
			}
			s.mu.Unlock()
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// sample reads libvirt's domains of the soak's nodes every 300 ms: a VMI
// UID that ran as two domain IDs or with two Started marks booted twice;
// two domains of one UID in one sample ran at once.
func (s *soak) sample(ctx context.Context) {
	for ctx.Err() == nil {
		doms, err := s.vw.conn.ListAllDomains(0)
		if err == nil {
			seen := map[types.UID][]string{}
			for i := range doms {
				dom := &doms[i]
				m := marksOfDomain(dom)
				if m != nil && slices.Contains(s.nodes, m.Owner) && m.VMI.UID != "" {
					name, _ := dom.GetName()
					id, idErr := dom.GetID()
					s.mu.Lock()
					if idErr == nil {
						seen[m.VMI.UID] = append(seen[m.VMI.UID], name)
						if s.ids[m.VMI.UID] == nil {
							s.ids[m.VMI.UID] = map[int]bool{}
						}
						s.ids[m.VMI.UID][int(id)] = true
						if len(s.ids[m.VMI.UID]) == 2 {
							s.violations = append(s.violations, fmt.Sprintf("VMI %s (UID %s) ran as two domain IDs %v", m.Key(), m.VMI.UID, keys(s.ids[m.VMI.UID])))
						}
					}
					if m.Started != nil {
						if s.starts[m.VMI.UID] == nil {
							s.starts[m.VMI.UID] = map[time.Time]bool{}
						}
						s.starts[m.VMI.UID][m.Started.At] = true
						if len(s.starts[m.VMI.UID]) == 2 {
							s.violations = append(s.violations, fmt.Sprintf("VMI %s (UID %s) started twice: %v", m.Key(), m.VMI.UID, keys(s.starts[m.VMI.UID])))
						}
					}
					s.mu.Unlock()
				}
				_ = dom.Free()
			}
			for uid, names := range seen {
				if len(names) > 1 {
					s.mu.Lock()
					s.violations = append(s.violations, fmt.Sprintf("UID %s ran as %d domains at once: %v", uid, len(names), names))
					s.mu.Unlock()
				}
			}
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func keys[K comparable](m map[K]bool) []K {
	var out []K
	for k := range m {
		out = append(out, k)
	}
	return out
}

// killQEMU kills the QEMU process of one running domain of the soak's
// VMIs, chosen by rng; false when none runs.
func (s *soak) killQEMU(rng *rand.Rand) bool {
	var list virtv1.VirtualMachineInstanceList
	if err := s.vw.client.List(context.Background(), &list, client.InNamespace(s.ns)); err != nil {
		return false
	}
	var running []virtv1.VirtualMachineInstance
	for _, v := range list.Items {
		if exists, id, _ := s.domainOf(v.Name); exists && id >= 0 && v.DeletionTimestamp == nil {
			running = append(running, v)
		}
	}
	if len(running) == 0 {
		return false
	}
	v := running[rng.IntN(len(running))]
	raw, err := os.ReadFile("/run/libvirt/qemu/" + domainName(s.ns, v.Name) + ".pid")
	if err != nil {
		return false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 1 {
		return false
	}
	s.mu.Lock()
	s.qemuKills[v.UID] = true
	s.mu.Unlock()
	return syscall.Kill(pid, syscall.SIGKILL) == nil
}

// divergences lists every object that differs from the truth, and what
// leaked: domains of the soak's nodes and state folders of VMIs that are
// gone, finalizers of objects that are gone.
func (s *soak) divergences(t *testing.T) []string {
	var out []string
	s.resolveUncertain()
	for _, o := range s.objectsCopy() {
		if d := s.truth(o); d != "" {
			out = append(out, d)
		}
	}
	var list virtv1.VirtualMachineInstanceList
	if err := s.vw.client.List(context.Background(), &list, client.InNamespace(s.ns)); err != nil {
		return append(out, fmt.Sprintf("list VMIs: %v", err))
	}
	live := map[string]types.UID{}
	for _, v := range list.Items {
		live[v.Name] = v.UID
	}
	doms, err := s.vw.conn.ListAllDomains(0)
	if err != nil {
		return append(out, fmt.Sprintf("list domains: %v", err))
	}
	for i := range doms {
		if m := marksOfDomain(&doms[i]); m != nil && slices.Contains(s.nodes, m.Owner) {
			if uid, ok := live[m.VMI.Name]; !ok || (m.VMI.UID != "" && uid != m.VMI.UID) {
				out = append(out, fmt.Sprintf("domain of %s (UID %s, node %s) left for a VMI that is gone", m.Key(), m.VMI.UID, m.Owner))
			}
		}
		_ = doms[i].Free()
	}
	for i, dir := range s.dirs {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			name, ok := strings.CutPrefix(e.Name(), s.ns+"_")
			if !e.IsDir() || !ok {
				continue
			}
			var v virtv1.VirtualMachineInstance
			err := s.vw.client.Get(context.Background(), types.NamespacedName{Namespace: s.ns, Name: name}, &v)
			if apierrors.IsNotFound(err) || (err == nil && v.Status.NodeName != s.nodes[i] && v.Labels[virtv1.NodeNameLabel] != s.nodes[i]) {
				out = append(out, fmt.Sprintf("state folder %s left on node %s", filepath.Join(dir, e.Name()), s.nodes[i]))
			}
		}
	}
	return out
}

// resolveUncertain reads what the API server holds of objects whose
// last operation failed as the workload saw it (it may have happened
// anyway): a VM's run strategy is what its spec says; an object whose
// creation or deletion is uncertain is deleted, so that its end is known.
func (s *soak) resolveUncertain() {
	for _, o := range s.objectsCopy() {
		if o.uncertain == "" {
			continue
		}
		var obj client.Object = &virtv1.VirtualMachineInstance{}
		if o.vm {
			obj = &virtv1.VirtualMachine{}
		}
		err := s.vw.client.Get(context.Background(), types.NamespacedName{Namespace: s.ns, Name: o.name}, obj)
		if err != nil && !apierrors.IsNotFound(err) {
			continue
		}
		gone := apierrors.IsNotFound(err)
		running := o.running
		if vm, ok := obj.(*virtv1.VirtualMachine); ok && !gone && vm.Spec.RunStrategy != nil {
			running = *vm.Spec.RunStrategy == virtv1.RunStrategyAlways
		}
		exists := o.exists && !gone
		if !gone && (o.uncertain == "create" || strings.HasPrefix(o.uncertain, "delete")) {
			if s.delete(o) != nil {
				continue
			}
			exists = false
		}
		s.mu.Lock()
		cur := s.objects[o.name]
		cur.exists, cur.running, cur.uncertain = exists, running, ""
		s.mu.Unlock()
	}
}

// countLive counts the soak's VMIs and VMs the API server still holds.
func (s *soak) countLive() int {
	var vmis virtv1.VirtualMachineInstanceList
	var vms virtv1.VirtualMachineList
	err1 := s.vw.client.List(context.Background(), &vmis, client.InNamespace(s.ns))
	err2 := s.vw.client.List(context.Background(), &vms, client.InNamespace(s.ns))
	if err := errors.Join(err1, err2); err != nil {
		return -1
	}
	return len(vmis.Items) + len(vms.Items)
}

// report prints the numbers of the run.
func (s *soak) report(t *testing.T, settled time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	conv := slices.Clone(s.converged)
	slices.Sort(conv)
	pct := func(p float64) time.Duration {
		if len(conv) == 0 {
			return 0
		}
		return conv[min(len(conv)-1, int(p*float64(len(conv))))].Round(10 * time.Millisecond)
	}
	t.Logf("soak: operations succeeded %v, failed %v", s.ops, s.opErrors)
	for kind, e := range s.lastError {
		t.Logf("soak: last error of %s: %s", kind, e)
	}
	t.Logf("soak: faults %v", s.faults)
	t.Logf("soak: VMI UIDs seen running %d; convergence of %d operations p50 %s p99 %s max %s (%d still pending at the end)",
		len(s.ids), len(conv), pct(0.5), pct(0.99), pct(1), len(s.pending))
	t.Logf("soak: settled %t, %s after the faults stopped", ok, settled.Round(time.Second))
}

// tail is the last n lines of text.
func tail(text string, n int) string {
	lines := strings.Split(text, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
