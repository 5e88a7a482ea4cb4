package main

// TestSoak: a workload of VMIs and VMs driven through the real API server
// across two agents and the control plane, while faults are injected at
// instants drawn from a seed; afterwards (faults stopped, a settle time)
// it checks invariants over the whole history. Rerun a failure with
// -soak.seed N (printed at the start).
//
// Each node runs on a libvirtd of its own (hosttest.Node), so that VMs
// migrate between them both ways (inside a node's namespace, the system
// libvirtd's URI would name the node's own); a fault restarts node 1's.
// Node 0's state folder is on a small tmpfs of its own, which a fault
// fills up; each agent reaches the API server through a loopback proxy
// of its own (soakLink), which a fault partitions. Half the guests start
// paused, the others boot the test guest, whose report on its console
// (appended to the state folder's serial log) says its boot ID: a VMI
// incarnation whose log shows two boot IDs booted twice.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
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
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

var (
	soakDuration = flag.Duration("soak.duration", 2*time.Minute, "how long TestSoak injects faults under its workload")
	soakSeed     = flag.Uint64("soak.seed", 27, "the seed of TestSoak's workload and fault instants")
	soakSettle   = flag.Duration("soak.settle", 4*time.Minute, "how long TestSoak waits, faults stopped, for everything to converge")
)

// soakMaxLive bounds the objects alive at once (2 shared cores, emulated
// guests).
const soakMaxLive = 4

// soakDiskSize is the size of the tmpfs node 0's state folder is on.
const soakDiskSize = 64 << 20

// soakClaims is how many VMs (o1, o2, ...) have a claim both agents map
// (-volume-claims), which the workload may hot-add to the VM; each claim
// is a sparse raw file of soakClaimSize bytes, shared by the nodes.
const (
	soakClaims    = 400
	soakClaimSize = 4 << 20
)

// soakObject is one VMI or VM of the workload and what the operations
// the workload saw succeed leave it as.
type soakObject struct {
	name    string
	vm      bool
	exists  bool // not deleted (as far as the workload saw)
	running bool // VMs: runStrategy Always, else Halted
	paused  bool // its guest starts paused (startStrategy Paused)
	disk    bool // VMs: its claim was hot-added (the template has it)
	// restartedFrom is the UID of the VMI a restart of the VM ended: its
	// VMI now is another ("" when never restarted).
	restartedFrom types.UID
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
	// libvirts are the nodes' daemons, as the soak reads them.
	libvirts []*soakLibvirt
	// fill is a file on node 0's state disk, outside its state folder,
	// that the disk-full fault writes until the disk is full.
	fill string
	// registry serves the guests' kernel-boot images.
	registry *soakRegistry
	// links are the nodes' agents' paths to the API server.
	links []*soakLink
	// claims are the agents' -volume-claims; claimFile names a VM's.
	claims    string
	claimFile func(vm string) string
	// virtctl is KubeVirt's virtctl with the subresource API it reaches
	// (restarts are virtctl restart).
	virtctl *virtctlWorld

	mu        sync.Mutex
	objects   map[string]*soakObject
	pending   []soakPending
	converged []time.Duration
	ops       map[string]int      // succeeded operations by kind
	opErrors  map[string]int      // failed operations by kind (faults make some fail)
	errs      map[string][]string // distinct errors by kind, the first few
	faults    map[string]int
	qemuKills map[types.UID]bool // VMIs whose QEMU the soak killed: Failed is their truth

	// Samples of libvirt: per VMI UID, the distinct domain IDs it ran
	// as and the distinct Started marks; per boot ID (read from the serial
	// logs of running guests), the UID whose log showed it first; per
	// UID, its boot IDs; violations seen in a sample.
	ids        map[types.UID]map[int]bool
	starts     map[types.UID]map[time.Time]bool
	bootOf     map[string]types.UID
	boots      map[types.UID][]string
	violations []string
	// migrated are the VMI UIDs the workload asked to migrate: they may
	// run as a domain of each node, one after the other.
	migrated map[types.UID]bool
}

// soakLibvirt is a node's libvirt daemon as the soak reads it: one
// connection, opened again after the daemon restarted.
type soakLibvirt struct {
	uri string
	// pidFile is where the daemon keeps a domain's QEMU process ID.
	pidFile func(domain string) string

	mu   sync.Mutex
	conn *libvirt.Connect
}

// do calls f with the daemon's connection; when f fails for another
// reason than a missing domain, the connection is opened again and f
// called once more (the daemon may have restarted in between).
func (l *soakLibvirt) do(f func(*libvirt.Connect) error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for try := 0; ; try++ {
		if l.conn == nil {
			c, err := libvirt.NewConnect(l.uri)
			if err != nil {
				return err
			}
			l.conn = c
		}
		err := f(l.conn)
		var lerr libvirt.Error
		if err == nil || try == 1 || (errors.As(err, &lerr) && lerr.Code == libvirt.ERR_NO_DOMAIN) {
			return err
		}
		_, _ = l.conn.Close()
		l.conn = nil
	}
}

func (l *soakLibvirt) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		_, _ = l.conn.Close()
		l.conn = nil
	}
}

func TestSoak(t *testing.T) {
	seed := *soakSeed
	t.Logf("soak: seed %d, duration %s, settle %s (rerun: go test -timeout 0 -run 'TestSoak$' -soak.seed %d -soak.duration %s)", seed, *soakDuration, *soakSettle, seed, *soakDuration)
	vw := &vmWorld{world: newWorld(t)}
	vw.cp = vw.cluster.StartControlPlane(t)
	s := &soak{
		vw: vw, ns: vw.namespace(t, "soak"), pool: uniqueName("pool"),
		nodes:   []string{fmt.Sprintf("soak-%d-a", os.Getpid()), fmt.Sprintf("soak-%d-b", os.Getpid())},
		objects: map[string]*soakObject{}, ops: map[string]int{}, opErrors: map[string]int{}, errs: map[string][]string{}, faults: map[string]int{},
		qemuKills: map[types.UID]bool{}, ids: map[types.UID]map[int]bool{}, starts: map[types.UID]map[time.Time]bool{},
		bootOf: map[string]types.UID{}, boots: map[types.UID][]string{}, migrated: map[types.UID]bool{},
	}
	disk := smallDisk(t, soakDiskSize)
	s.dirs = []string{filepath.Join(disk, "state"), stateDir(t)}
	if err := os.Mkdir(s.dirs[0], 0o711); err != nil {
		t.Fatal(err)
	}
	s.fill = filepath.Join(disk, "fill")
	for _, n := range s.nodes {
		s.libvirts = append(s.libvirts, &soakLibvirt{uri: hosttest.Node(t, n), pidFile: func(d string) string { return hosttest.NodeQEMUPIDFile(n, d) }})
	}
	defer func() {
		for _, l := range s.libvirts {
			l.close()
		}
	}()
	s.makeClaims(t)
	s.registry = newSoakRegistry(t)
	s.virtctl = &virtctlWorld{world: vw.world}
	s.virtctl.startSubresources(t)
	for range s.nodes {
		s.links = append(s.links, newSoakLink(t, vw.cluster.Kubeconfig))
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
	var pastOutput []string // of the agents killed
	fills := 0
	for time.Now().Before(end) {
		time.Sleep(time.Duration(2000+frng.IntN(4000)) * time.Millisecond)
		// Each kind once per round, in an order of the seed: a short run
		// still injects all of them.
		if len(round) == 0 {
			round = frng.Perm(10)
		}
		k := round[0]
		round = round[1:]
		switch k {
		case 0:
			i := frng.IntN(2)
			agents[i].stop(t, os.Kill)
			pastOutput = append(pastOutput, agents[i].output())
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
		case 5:
			sig := []string{"TERM", "KILL"}[frng.IntN(2)]
			if err := hosttest.RestartNodeLibvirtd(s.nodes[1], sig); err != nil {
				t.Fatal(err)
			}
			s.count("libvirtd restart (SIG" + sig + ")")
		case 6:
			if err := fillDisk(s.fill); err != nil {
				t.Fatal(err)
			}
			// A VMI arrives on the full disk's node: its start must wait
			// for space, and then succeed.
			fills++
			o := &soakObject{name: fmt.Sprintf("full%d", fills), exists: true, running: true, paused: frng.IntN(2) == 0}
			s.op("create", o, func() error { return s.create(o, 0) })
			time.Sleep(time.Duration(3000+frng.IntN(7000)) * time.Millisecond)
			if err := os.Remove(s.fill); err != nil {
				t.Fatal(err)
			}
			s.count("state disk full")
		case 7:
			s.registry.stop(true)
			time.Sleep(time.Duration(5000+frng.IntN(10000)) * time.Millisecond)
			s.registry.stop(false)
			s.count("registry not answering")
		case 8:
			// Both agents at once, while a migration between them runs
			// when one can be made: the migration is settled by their
			// successors.
			during := s.migrateNow()
			for i := range agents {
				agents[i].stop(t, os.Kill)
				pastOutput = append(pastOutput, agents[i].output())
			}
			time.Sleep(time.Duration(frng.IntN(6000)) * time.Millisecond)
			for i := range agents {
				agents[i] = s.startAgent(t, i)
			}
			s.count(map[bool]string{true: "both agents SIGKILL, migrating", false: "both agents SIGKILL"}[during])
		case 9:
			// A node cut off from the API server for 5–50 s (at most a
			// sixth of the run, so that a short one injects every kind):
			// long enough, at times, for client-go to give its
			// connections up.
			i := frng.IntN(2)
			span := max(0, min(45*time.Second, *soakDuration/6-5*time.Second))
			s.links[i].cut(true)
			time.Sleep(5*time.Second + time.Duration(frng.IntN(45000))*span/45000)
			s.links[i].cut(false)
			s.count("node partitioned from the API server")
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
	var migs virtv1.VirtualMachineInstanceMigrationList
	if err := vw.client.List(context.Background(), &migs, client.InNamespace(s.ns)); err == nil {
		phases := map[virtv1.VirtualMachineInstanceMigrationPhase]int{}
		reasons := map[string]int{} // of the failed ones
		for _, m := range migs.Items {
			phases[m.Status.Phase]++
			if m.Status.Phase == virtv1.MigrationFailed {
				// The control plane fails a migration without a reason
				// when its VMI is deleted or ends, or migrates otherwise.
				reason := "(no failureReason)"
				if ms := m.Status.MigrationState; ms != nil && ms.FailureReason != "" {
					reason = ms.FailureReason
				}
				reasons[reason]++
			}
		}
		t.Logf("soak: migrations by phase %v; the failed ones' reasons %v", phases, reasons)
	}
	// What the faults did to the agents, as they said it.
	all := strings.Join(append(pastOutput, agents[0].output(), agents[1].output()), "\n")
	t.Logf("soak: the agents said %d times that the libvirt connection was lost, %d times that a disk was full; the registry left %d requests unanswered; partitions held up %d connections and transfers",
		strings.Count(all, "libvirt connection lost"), strings.Count(all, "no space left on device"), s.registry.unanswered.Load(), s.links[0].held.Load()+s.links[1].held.Load())
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
	return s.vw.startNode(t, s.nodes[i], s.dirs[i], "-kubeconfig", s.links[i].kubeconfig, "-claim", "-node-labels", "example.com/pool="+s.pool, "-heartbeat-interval", "1s",
		"-libvirt-uri", s.libvirts[i].uri, "-volume-claims", s.claims)
}

// soakClaim is the claim (and volume, disk and serial) the workload may
// hot-add to the VM vm.
func soakClaim(vm string) string { return "hp-" + vm }

// makeClaims makes the raw files of the claims of the VMs o1 to
// o<soakClaims> and the agents' flag that maps them.
func (s *soak) makeClaims(t *testing.T) {
	dir := hosttest.Dir(t, stateRoot, "claims-")
	s.claimFile = func(vm string) string { return filepath.Join(dir, soakClaim(vm)+".img") }
	var flag []string
	for n := 1; n <= soakClaims; n++ {
		vm := fmt.Sprintf("o%d", n)
		if err := os.WriteFile(s.claimFile(vm), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(s.claimFile(vm), soakClaimSize); err != nil {
			t.Fatal(err)
		}
		flag = append(flag, s.ns+"/"+soakClaim(vm)+"="+s.claimFile(vm))
	}
	s.claims = strings.Join(flag, ",")
}

// migrate asks for a migration of the VM o's VMI (the control plane picks
// the other node).
func (s *soak) migrate(o soakObject) error {
	ctx := context.Background()
	if busy, err := s.migrating(o.name); busy || err != nil {
		return err // one at a time, as KubeVirt's admission asks
	}
	var vmi virtv1.VirtualMachineInstance
	if err := s.vw.client.Get(ctx, types.NamespacedName{Namespace: s.ns, Name: o.name}, &vmi); err != nil {
		return err
	}
	s.mu.Lock()
	s.migrated[vmi.UID] = true
	s.mu.Unlock()
	return s.vw.client.Create(ctx, &virtv1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, GenerateName: o.name + "-"},
		Spec:       virtv1.VirtualMachineInstanceMigrationSpec{VMIName: o.name},
	})
}

// migrateNow asks for a migration of a running VM whose last operation
// converged (the first by name) and waits up to 20 s until its source
// reports the migration begun; true then.
func (s *soak) migrateNow() bool {
	pending := s.pendingNames()
	for _, o := range s.objectsCopy() {
		if !o.migratable(pending) {
			continue
		}
		if s.migrate(o) != nil {
			return false
		}
		for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(100 * time.Millisecond) {
			var vmi virtv1.VirtualMachineInstance
			if err := s.vw.client.Get(context.Background(), types.NamespacedName{Namespace: s.ns, Name: o.name}, &vmi); err != nil {
				continue
			}
			if m := vmi.Status.MigrationState; m != nil && m.StartTimestamp != nil && m.EndTimestamp == nil {
				return true
			}
		}
		return false
	}
	return false
}

// migrating tells whether a migration of the VMI name has not ended.
func (s *soak) migrating(name string) (bool, error) {
	var migs virtv1.VirtualMachineInstanceMigrationList
	if err := s.vw.client.List(context.Background(), &migs, client.InNamespace(s.ns)); err != nil {
		return false, err
	}
	return slices.ContainsFunc(migs.Items, func(m virtv1.VirtualMachineInstanceMigration) bool {
		return m.Spec.VMIName == name && !migrationEnded(&m)
	}), nil
}

// migrationEnded: the migration m Succeeded or Failed.
func migrationEnded(m *virtv1.VirtualMachineInstanceMigration) bool {
	return m.Status.Phase == virtv1.MigrationSucceeded || m.Status.Phase == virtv1.MigrationFailed
}

// hotAdd adds o's claim to its template, hot-pluggable, on a SCSI disk
// with the claim's name as its serial, as virtctl addvolume VM does (an
// update of the VM as read: a conflict fails it).
func (s *soak) hotAdd(o soakObject) error {
	// Not while it migrates: the raw file would be opened by both nodes'
	// QEMUs.
	if busy, err := s.migrating(o.name); err != nil {
		return err
	} else if busy {
		return errors.New("migrating")
	}
	c := soakClaim(o.name)
	return s.updateTemplate(o.name, func(spec *virtv1.VirtualMachineInstanceSpec) {
		spec.Volumes = append(spec.Volumes, virtv1.Volume{Name: c, VolumeSource: virtv1.VolumeSource{
			PersistentVolumeClaim: &virtv1.PersistentVolumeClaimVolumeSource{Hotpluggable: true,
				PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: c}}}})
		spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, virtv1.Disk{Name: c, Serial: c,
			DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusSCSI}}})
	})
}

// hotRemove takes o's claim out of its template, as virtctl removevolume
// VM does: the VM controller takes it out of the running VMI's spec, the
// agent detaches it.
func (s *soak) hotRemove(o soakObject) error {
	c := soakClaim(o.name)
	return s.updateTemplate(o.name, func(spec *virtv1.VirtualMachineInstanceSpec) {
		spec.Volumes = slices.DeleteFunc(spec.Volumes, func(v virtv1.Volume) bool { return v.Name == c })
		spec.Domain.Devices.Disks = slices.DeleteFunc(spec.Domain.Devices.Disks, func(d virtv1.Disk) bool { return d.Name == c })
	})
}

// updateTemplate changes the template of the VM name as change says, in
// an update of the VM as read (a conflict fails it).
func (s *soak) updateTemplate(name string, change func(*virtv1.VirtualMachineInstanceSpec)) error {
	ctx := context.Background()
	var vm virtv1.VirtualMachine
	if err := s.vw.client.Get(ctx, types.NamespacedName{Namespace: s.ns, Name: name}, &vm); err != nil {
		return err
	}
	change(&vm.Spec.Template.Spec)
	return s.vw.client.Update(ctx, &vm)
}

// restart restarts the VM o with virtctl restart (virt-api's restart
// subresource writes a stop request of its VMI's UID and a start request;
// a VM without VMI, or with a change underway, refuses it). It returns the
// UID of the VMI it read just before: the restart ends that one or, had it
// just changed, a newer one.
func (s *soak) restart(o soakObject) (types.UID, error) {
	var vmi virtv1.VirtualMachineInstance
	if err := s.vw.client.Get(context.Background(), types.NamespacedName{Namespace: s.ns, Name: o.name}, &vmi); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := s.virtctl.command(ctx, "", "-n", s.ns, "restart", o.name).CombinedOutput(); err != nil {
		return "", fmt.Errorf("virtctl restart: %v: %s", err, bytes.TrimSpace(out))
	}
	return vmi.UID, nil
}

// smallDisk mounts a tmpfs of size bytes on a folder of the test's own
// (unmounted when the test ends) and returns the folder.
func smallDisk(t *testing.T, size int64) string {
	dir := stateDir(t)
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d,mode=0711", size), "soak", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs on %s: %v: %s", dir, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", "--lazy", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}

// fillDisk writes path until its file system is full.
func fillDisk(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	chunk := make([]byte, 1<<20)
	for {
		if _, err = f.Write(chunk); err != nil {
			break
		}
	}
	if !errors.Is(err, syscall.ENOSPC) {
		f.Close()
		return fmt.Errorf("fill %s: %v, want ENOSPC", path, err)
	}
	return f.Close()
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
		choice := rng.IntN(12)
		pending := s.pendingNames()
		var hotAddable, hotRemovable, restartable, migratable []soakObject
		for _, o := range live {
			if !o.vm {
				continue
			}
			if o.migratable(pending) {
				migratable = append(migratable, o)
			}
			if n, _ := strconv.Atoi(strings.TrimPrefix(o.name, "o")); o.running && !o.disk && n <= soakClaims {
				hotAddable = append(hotAddable, o)
			}
			if o.disk {
				hotRemovable = append(hotRemovable, o)
			}
			if o.running {
				restartable = append(restartable, o)
			}
		}
		switch {
		case len(live) < soakMaxLive && (choice < 4 || len(live) == 0):
			n++
			o := &soakObject{name: fmt.Sprintf("o%d", n), vm: rng.IntN(2) == 0, exists: true, running: true, paused: rng.IntN(2) == 0}
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
			s.op(map[bool]string{true: "start VM", false: "stop VM"}[o.running], &o, func() error { return s.setRunning(o) })
		case choice == 7 && len(hotAddable) > 0:
			o := hotAddable[rng.IntN(len(hotAddable))]
			s.op("hot-add disk", &o, func() error { o.disk = true; return s.hotAdd(o) })
		case choice == 8 && len(migratable) > 0:
			o := migratable[rng.IntN(len(migratable))]
			s.op("migrate", &o, func() error { return s.migrate(o) })
		case choice == 9 && len(restartable) > 0:
			o := restartable[rng.IntN(len(restartable))]
			s.op("restart VM", &o, func() (err error) { o.restartedFrom, err = s.restart(o); return err })
		case choice == 10 && len(hotRemovable) > 0:
			o := hotRemovable[rng.IntN(len(hotRemovable))]
			s.op("hot-remove disk", &o, func() error { o.disk = false; return s.hotRemove(o) })
		case len(live) > 0:
			o := live[rng.IntN(len(live))]
			s.op(map[bool]string{true: "delete VM", false: "delete VMI"}[o.vm], &o, func() error { o.exists = false; return s.delete(o) })
		}
	}
}

// migratable tells whether the workload may migrate o: a VM that exists
// and runs, without a hot-added raw file (both nodes' QEMUs would open
// that one file), whose last operation (a hot removal, say) converged
// (pending: the names with an operation not converged).
func (o soakObject) migratable(pending map[string]bool) bool {
	return o.vm && o.exists && o.running && !o.disk && !pending[o.name]
}

// pendingNames are the objects with an operation not converged.
func (s *soak) pendingNames() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]bool{}
	for _, p := range s.pending {
		out[p.name] = true
	}
	return out
}

// setRunning writes the VM o's run strategy (Always or Halted), as
// virtctl start and stop do for a VM that runs Always or is Halted; not
// while a restart's requests wait: KubeVirt's VM controller turns the
// start request of a Halted VM without VMI into runStrategy Always (a
// paused start's, virtctl start --paused), so a stop written before the
// restart's start was taken up is undone — in KubeVirt as here.
func (s *soak) setRunning(o soakObject) error {
	ctx := context.Background()
	var vm virtv1.VirtualMachine
	if err := s.vw.client.Get(ctx, types.NamespacedName{Namespace: s.ns, Name: o.name}, &vm); err != nil {
		return err
	}
	if len(vm.Status.StateChangeRequests) > 0 {
		return errors.New("a restart is underway")
	}
	// Only the workload writes requests, one operation at a time: none
	// can arrive before the patch.
	return s.vw.client.Patch(ctx, &vm, client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"runStrategy":%q}}`, strategyOf(o.running))))
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
// and stays so through later operations, until the soak resolves it by
// reading what the API server holds).
func (s *soak) op(kind string, o *soakObject, do func() error) {
	err := do()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.opErrors[kind]++
		k := kind // of which object, unless it says
		if !strings.HasSuffix(k, " VM") && !strings.HasSuffix(k, " VMI") {
			k += map[bool]string{true: " VM", false: " VMI"}[o.vm]
		}
		if e := err.Error(); len(s.errs[k]) < 3 && !slices.Contains(s.errs[k], e) {
			s.errs[k] = append(s.errs[k], e)
		}
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
	if kind == "create" && !o.paused {
		s.ops["create (guest booting)"]++
	}
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
	vmi := guestVMI(s.ns, o.name, 5, testguest.ActionACPI)
	ref, err := s.registry.ref(context.Background(), o.name)
	if err != nil {
		return fmt.Errorf("tag the image of %s: %w", o.name, err)
	}
	vmi.Spec.Domain.Firmware.KernelBoot.Container.Image = ref
	// A cloud-init disk: its ISO is written to the state folder at each
	// start (and on a migration's target), where a full disk refuses it.
	vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "cloudinit",
		DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}})
	vmi.Spec.Volumes = append(vmi.Spec.Volumes, virtv1.Volume{Name: "cloudinit", VolumeSource: virtv1.VolumeSource{
		CloudInitNoCloud: &virtv1.CloudInitNoCloudSource{UserData: "#cloud-config\nhostname: " + o.name + "\n"}}})
	if o.paused {
		paused := virtv1.StartStrategyPaused
		vmi.Spec.StartStrategy = &paused
	}
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
		case !hasVMI || vm.Status.PrintableStatus != map[bool]virtv1.VirtualMachinePrintableStatus{true: virtv1.VirtualMachineStatusPaused, false: virtv1.VirtualMachineStatusRunning}[o.paused]:
			// printableStatus Paused when its guest starts paused, from its VMI.
			return fmt.Sprintf("VM %s started (paused %t): %s; VMI %s", o.name, o.paused, describeVM(&vm), describe(vmiOrNil(hasVMI, &vmi)))
		}
		if d := s.vmiTruth(&vmi, false); d != "" {
			return d
		}
		if o.restartedFrom != "" && vmi.UID == o.restartedFrom {
			return fmt.Sprintf("VM %s restarted, its VMI is still UID %s: %s", o.name, vmi.UID, describe(&vmi))
		}
		return s.diskTruth(o, &vmi)
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

// diskTruth: the VM o's claim, hot-added, is in its running VMI's spec
// and volume status (Ready) and attached to its domain; never added or
// removed again, it is in none of them.
func (s *soak) diskTruth(o soakObject, vmi *virtv1.VirtualMachineInstance) string {
	c := soakClaim(o.name)
	inSpec := slices.ContainsFunc(vmi.Spec.Volumes, func(v virtv1.Volume) bool { return v.Name == c })
	i := slices.IndexFunc(vmi.Status.VolumeStatus, func(v virtv1.VolumeStatus) bool { return v.Name == c })
	attached := false
	s.onDomain(o.name, func(dom *libvirt.Domain) error {
		x, err := dom.GetXMLDesc(0)
		attached = err == nil && strings.Contains(x, "'"+s.claimFile(o.name)+"'")
		return err
	})
	if o.disk == inSpec && o.disk == attached && (o.disk && i >= 0 && vmi.Status.VolumeStatus[i].Phase == virtv1.VolumeReady || !o.disk && i < 0) {
		return ""
	}
	return fmt.Sprintf("VM %s: its claim %s hot-added %t: in the VMI's spec %t, attached to its domain %t; volume status %+v", o.name, c, o.disk, inSpec, attached, vmi.Status.VolumeStatus)
}

// domainOf is world.domain without t (the soak's goroutines must not fail
// the test), on each node's libvirt: the first that has the domain.
func (s *soak) domainOf(name string) (exists bool, id int, owner string) {
	exists = s.onDomain(name, func(dom *libvirt.Domain) error {
		id = -1
		if n, err := dom.GetID(); err == nil {
			id = int(n)
		}
		if m := marksOfDomain(dom); m != nil {
			owner = m.Owner
		}
		return nil
	})
	if !exists {
		return false, -1, ""
	}
	return exists, id, owner
}

// onDomain calls f with the domain of the VMI name on the first node's
// libvirt that has it; false when none has it (or f failed on each).
func (s *soak) onDomain(name string, f func(*libvirt.Domain) error) bool {
	for _, l := range s.libvirts {
		err := l.do(func(c *libvirt.Connect) error {
			dom, err := c.LookupDomainByName(domainName(s.ns, name))
			if err != nil {
				return err
			}
			defer dom.Free()
			return f(dom)
		})
		if err == nil {
			return true
		}
	}
	return false
}

// soakDomain is one domain of a node's libvirt with the soak's marks.
type soakDomain struct {
	name   string
	node   int
	active bool
	// migrating: paused by a migration (an incoming target, or a source
	// handing over), not running its guest.
	migrating bool
	id        int
	marks     *hostplan.Marks
}

// domains lists the domains of every node's libvirt that carry the marks
// of one of the soak's nodes.
func (s *soak) domains() ([]soakDomain, error) {
	var out []soakDomain
	for i, l := range s.libvirts {
		err := l.do(func(c *libvirt.Connect) error {
			doms, err := c.ListAllDomains(0)
			if err != nil {
				return err
			}
			for j := range doms {
				dom := &doms[j]
				if m := marksOfDomain(dom); m != nil && slices.Contains(s.nodes, m.Owner) {
					d := soakDomain{node: i, id: -1, marks: m}
					d.name, _ = dom.GetName()
					if id, err := dom.GetID(); err == nil {
						d.active, d.id = true, int(id)
					}
					if state, reason, err := dom.GetState(); err == nil {
						d.migrating = state == libvirt.DOMAIN_PAUSED && libvirt.DomainPausedReason(reason) == libvirt.DOMAIN_PAUSED_MIGRATION
					}
					out = append(out, d)
				}
				_ = dom.Free()
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("node %s: list domains: %w", s.nodes[i], err)
		}
	}
	return out, nil
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

// sample reads the nodes' libvirts every 300 ms: a VMI UID that ran as
// two domain IDs, with two Started marks or with two boot IDs in its
// serial log booted twice; two domains of one UID running in two samples
// in a row ran at once. (One sample reads the nodes one after the other:
// a migration's switchover between the two reads shows its guest running
// on both in that one sample.)
func (s *soak) sample(ctx context.Context) {
	var twice map[types.UID]bool // UIDs running on two domains in the last sample
	for ctx.Err() == nil {
		if doms, err := s.domains(); err == nil {
			seen := map[types.UID][]string{}
			for _, d := range doms {
				if d.marks.VMI.UID == "" {
					continue
				}
				s.sampleDomain(d, seen)
			}
			now := map[types.UID]bool{}
			for uid, names := range seen {
				if len(names) > 1 {
					now[uid] = true
					if twice[uid] {
						s.violate("UID %s ran as %d domains at once: %v", uid, len(names), names)
					}
				}
			}
			twice = now
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// sampleDomain records what one sample saw of the domain d.
func (s *soak) sampleDomain(d soakDomain, seen map[types.UID][]string) {
	uid, key := d.marks.VMI.UID, d.marks.Key()
	var log []byte
	if d.active {
		log, _ = os.ReadFile(filepath.Join(s.dirs[d.node], d.name, "serial0.log"))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if d.active && !d.migrating {
		seen[uid] = append(seen[uid], s.nodes[d.node]+"/"+d.name)
	}
	// A start counts once the launcher confirmed it (the Started mark not
	// pending): a start whose QEMU died before the guest ran (libvirtd
	// killed in the middle) is tried again, as KubeVirt's handler retries.
	started := d.marks.Started != nil && !d.marks.Started.Pending
	if d.active && started {
		// Domain IDs are a daemon's own: keyed by node. A VMI that
		// migrates runs as a domain of each node it goes to.
		if s.ids[uid] == nil {
			s.ids[uid] = map[int]bool{}
		}
		s.ids[uid][d.node<<20|d.id] = true
		if len(s.ids[uid]) > 1 && !s.migrated[uid] {
			s.violateLocked("VMI %s (UID %s) ran as %d domains (node<<20|ID)", key, uid, len(s.ids[uid]))
		}
	}
	if started {
		if s.starts[uid] == nil {
			s.starts[uid] = map[time.Time]bool{}
		}
		s.starts[uid][d.marks.Started.At] = true
		if len(s.starts[uid]) > 1 {
			s.violateLocked("VMI %s (UID %s) started %d times", key, uid, len(s.starts[uid]))
		}
	}
	for _, id := range testguest.BootIDs(string(log)) {
		switch first, ok := s.bootOf[id]; {
		case !ok:
			s.bootOf[id] = uid
			s.boots[uid] = append(s.boots[uid], id)
			if len(s.boots[uid]) > 1 {
				s.violateLocked("VMI %s (UID %s) booted %d times: boot IDs %v", key, uid, len(s.boots[uid]), s.boots[uid])
			}
		case first != uid:
			s.violateLocked("the serial log of VMI %s (UID %s) shows boot %s of UID %s: a state folder outlived its VMI", key, uid, id, first)
			s.bootOf[id] = uid
		}
	}
}

// violate records a violation, once however often it is seen.
func (s *soak) violate(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.violateLocked(format, args...)
}

// violateLocked is violate with s.mu held.
func (s *soak) violateLocked(format string, args ...any) {
	if v := fmt.Sprintf(format, args...); !slices.Contains(s.violations, v) {
		s.violations = append(s.violations, v)
	}
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
	var raw []byte
	err := os.ErrNotExist
	for _, l := range s.libvirts {
		if raw, err = os.ReadFile(l.pidFile(domainName(s.ns, v.Name))); err == nil {
			break
		}
	}
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
	live := map[string]virtv1.VirtualMachineInstance{}
	for _, v := range list.Items {
		live[v.Name] = v
	}
	doms, err := s.domains()
	if err != nil {
		return append(out, err.Error())
	}
	for _, d := range doms {
		switch v, ok := live[d.marks.VMI.Name]; {
		case !ok || (d.marks.VMI.UID != "" && v.UID != d.marks.VMI.UID):
			out = append(out, fmt.Sprintf("domain of %s (UID %s, node %s) left on node %s for a VMI that is gone", d.marks.Key(), d.marks.VMI.UID, d.marks.Owner, s.nodes[d.node]))
		case v.Status.NodeName != "" && v.Status.NodeName != s.nodes[d.node]:
			out = append(out, fmt.Sprintf("domain of %s (UID %s) left on node %s, its VMI is on %s", d.marks.Key(), v.UID, s.nodes[d.node], v.Status.NodeName))
		}
	}
	var migs virtv1.VirtualMachineInstanceMigrationList
	if err := s.vw.client.List(context.Background(), &migs, client.InNamespace(s.ns)); err != nil {
		return append(out, fmt.Sprintf("list migrations: %v", err))
	}
	for _, m := range migs.Items {
		if !migrationEnded(&m) {
			out = append(out, fmt.Sprintf("migration %s of %s not ended: %s", m.Name, m.Spec.VMIName, m.Status.Phase))
		}
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
		running, disk := o.running, o.disk
		if vm, ok := obj.(*virtv1.VirtualMachine); ok && !gone && vm.Spec.RunStrategy != nil {
			running = *vm.Spec.RunStrategy == virtv1.RunStrategyAlways
		}
		if vm, ok := obj.(*virtv1.VirtualMachine); ok && !gone && vm.Spec.Template != nil {
			disk = slices.ContainsFunc(vm.Spec.Template.Spec.Volumes, func(v virtv1.Volume) bool { return v.Name == soakClaim(o.name) })
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
		cur.exists, cur.running, cur.disk, cur.uncertain = exists, running, disk, ""
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
	for _, kind := range slices.Sorted(maps.Keys(s.errs)) {
		t.Logf("soak: errors of %s: %q", kind, s.errs[kind])
	}
	t.Logf("soak: faults %v", s.faults)
	booted := 0
	for _, ids := range s.boots {
		booted += len(ids)
	}
	t.Logf("soak: boots seen on the guests' consoles %d, of %d VMI UIDs", booted, len(s.boots))
	t.Logf("soak: VMI UIDs seen running %d; convergence of %d operations p50 %s p99 %s max %s (%d still pending at the end)",
		len(s.ids), len(conv), pct(0.5), pct(0.99), pct(1), len(s.pending))
	t.Logf("soak: settled %t, %s after the faults stopped", ok, settled.Round(time.Second))
}

// tail is the last n lines of text.
func tail(text string, n int) string {
	lines := strings.Split(text, "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
