package main

// KubeVirt's density test (its docs/perf-scale-benchmarks.md) on this
// machine: N minimal VMIs created 100 ms apart through the API server,
// spread over four node agents, each a simulated node (an owner and a
// state folder of its own) on the shared libvirtd.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

var (
	densityN    = flag.Int("density.n", 20, "TestDensity: how many VMIs (KubeVirt's density test creates 100)")
	densityBoot = flag.Bool("density.boot", false, "TestDensity: boot the test guests instead of starting them paused")
)

const (
	// densityAgents is how many simulated nodes share the VMIs.
	densityAgents = 4
	// densityInterval is KubeVirt's: one VMI created every 100 ms.
	densityInterval = 100 * time.Millisecond
	// densityWritesPerVMI is the most writes of VMIs (POST, PUT, PATCH,
	// refused ones too; what KubeVirt's density test counts as its
	// scalability figures) per VMI the API server may count between the
	// first creation and the last VMI Running, the test's own creations
	// included. Events are counted and printed beside them.
	densityWritesPerVMI = 4.0
)

// TestDensity is KubeVirt's density test: -density.n VMIs (20 unless told)
// created densityInterval apart, each bound to one of four agents, started
// paused (startStrategy: Paused, so the machine measures the control path
// and libvirt, not booting guests; -density.boot boots them), timed from
// each creation until a client watching the API server sees it Running. It
// prints p50 and p95 of that time, each agent's CPU seconds and peak RSS
// per VMI, and the API server's own request counts
// (apiserver_request_total by verb and resource) per VMI over the same
// span, and fails when the writes of VMIs per VMI exceed
// densityWritesPerVMI.
//
//	(cd examples/nodeagent && go test -count=1 -run TestDensity -v -density.n 100)
//	(cd examples/nodeagent && go test -count=1 -run TestDensity -v -density.boot)
func TestDensity(t *testing.T) {
	n := *densityN
	w := newWorld(t)
	agents := make([]*agentProcess, densityAgents)
	for i := range agents {
		agents[i] = w.startNode(t, uniqueName("density"), stateDir(t))
	}
	ns := w.namespace(t, "density")
	watcher, err := client.NewWithWatch(w.cluster.Config, client.Options{Scheme: w.client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	events, err := watcher.Watch(ctx, &virtv1.VirtualMachineInstanceList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	defer events.Stop()
	kube, err := kubernetes.NewForConfig(w.cluster.Config)
	if err != nil {
		t.Fatal(err)
	}

	cpu0, rss0 := agentUsage(t, agents)
	libvirtd0 := processCPU(t, libvirtdPID(t))
	requests0 := apiRequests(ctx, t, kube)
	created := make(map[string]time.Time, n)
	createdAt := make(chan struct {
		name string
		at   time.Time
	}, n)
	go func() {
		tick := time.NewTicker(densityInterval)
		defer tick.Stop()
		for i := range n {
			vmi := densityVMI(ns, fmt.Sprintf("density-%d", i), *densityBoot)
			bound(vmi, agents[i%len(agents)].node)
			at := time.Now()
			if err := w.client.Create(ctx, vmi); err != nil {
				t.Errorf("create VMI %s: %v", vmi.Name, err)
				cancel()
				return
			}
			createdAt <- struct {
				name string
				at   time.Time
			}{vmi.Name, at}
			<-tick.C
		}
	}()
	var toRunning []time.Duration
	ran := map[string]bool{}
	for len(toRunning) < n {
		select {
		case c := <-createdAt:
			created[c.name] = c.at
			continue
		case ev, ok := <-events.ResultChan():
			if !ok {
				t.Fatalf("the watch ended with %d of %d VMIs Running", len(toRunning), n)
			}
			vmi, isVMI := ev.Object.(*virtv1.VirtualMachineInstance)
			if !isVMI || ev.Type != watch.Modified || vmi.Status.Phase != virtv1.Running || ran[vmi.Name] {
				continue
			}
			for created[vmi.Name].IsZero() { // its creation is being recorded
				c := <-createdAt
				created[c.name] = c.at
			}
			ran[vmi.Name] = true
			toRunning = append(toRunning, time.Since(created[vmi.Name]))
		}
	}
	requests := apiRequests(ctx, t, kube)
	cpu, rss := agentUsage(t, agents)
	libvirtd := processCPU(t, libvirtdPID(t)) - libvirtd0
	qemu := qemuCPU(t, ns)

	slices.Sort(toRunning)
	mode := "paused"
	if *densityBoot {
		mode = "booting"
	}
	t.Logf("density: %d VMIs (%s) created %s apart over %d agents", n, mode, densityInterval, len(agents))
	t.Logf("density: creation → Running p50 %s p95 %s max %s",
		percentile(toRunning, 50).Round(time.Millisecond), percentile(toRunning, 95).Round(time.Millisecond), toRunning[n-1].Round(time.Millisecond))
	t.Logf("density: agents' CPU %.2f s (%.1f ms per VMI); peak RSS %.1f MiB per agent, %.2f MiB per VMI above the agents' idle RSS",
		cpu-cpu0, (cpu-cpu0)*1000/float64(n), float64(rss)/float64(len(agents))/(1<<20), float64(rss-rss0)/float64(n)/(1<<20))
	t.Logf("density: libvirtd's CPU %.2f s (%.1f ms per VMI); the VMIs' QEMU processes' CPU %.2f s (%.1f ms per VMI)",
		libvirtd, libvirtd*1000/float64(n), qemu, qemu*1000/float64(n))
	writes, vmiWrites := 0.0, 0.0
	var lines []string
	for k, v := range requests {
		d := v - requests0[k]
		if d == 0 {
			continue
		}
		if k.write() {
			writes += d
			if k.resource == "virtualmachineinstances" {
				vmiWrites += d
			}
		}
		lines = append(lines, fmt.Sprintf("%-8s %-32s %s %7.0f  %6.2f/VMI", k.verb, k.resource, k.code, d, d/float64(n)))
	}
	slices.Sort(lines)
	t.Logf("density: API requests from the first creation to the last Running (apiserver_request_total):\n%s", strings.Join(lines, "\n"))
	t.Logf("density: %.2f writes of VMIs per VMI (goal ≤ %.0f); %.2f writes of any resource per VMI",
		vmiWrites/float64(n), densityWritesPerVMI, writes/float64(n))
	if got := vmiWrites / float64(n); got > densityWritesPerVMI {
		t.Errorf("%.2f writes of VMIs per VMI, want at most %.0f", got, densityWritesPerVMI)
	}

	for i := range n {
		vmi := w.get(t, ns, fmt.Sprintf("density-%d", i))
		if err := w.client.Delete(context.Background(), vmi); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		w.waitGone(t, ns, fmt.Sprintf("density-%d", i), 5*time.Minute)
	}
}

// densityVMI is the test guest, started paused unless boot.
func densityVMI(ns, name string, boot bool) *virtv1.VirtualMachineInstance {
	vmi := guestVMI(ns, name, 0, testguest.ActionIgnore)
	if !boot {
		paused := virtv1.StartStrategyPaused
		vmi.Spec.StartStrategy = &paused
	}
	return vmi
}

// percentile is the p-th percentile of sorted (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[max(i-1, 0)]
}

// agentUsage is the agents' CPU time (user and system, in seconds) and
// the sum of their peak resident set sizes (bytes), from /proc.
func agentUsage(t testing.TB, agents []*agentProcess) (cpu float64, peakRSS int64) {
	t.Helper()
	for _, a := range agents {
		cpu += processCPU(t, a.PID())
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", a.PID()))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				if err != nil {
					t.Fatalf("/proc/%d/status: %q: %v", a.PID(), line, err)
				}
				peakRSS += kb << 10
			}
		}
	}
	return cpu, peakRSS
}

// processCPU is the CPU time (user and system, in seconds) of process
// pid so far, from /proc/PID/stat.
func processCPU(t testing.TB, pid int) float64 {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command's closing parenthesis: state is field
	// 3, utime and stime are fields 14 and 15 (clock ticks).
	_, rest, _ := strings.Cut(string(stat), ") ")
	cpu := 0.0
	for _, s := range strings.Fields(rest)[11:13] {
		ticks, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("/proc/%d/stat: %v", pid, err)
		}
		cpu += ticks / 100 // USER_HZ
	}
	return cpu
}

// libvirtdPID is the shared libvirtd's process id.
func libvirtdPID(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile("/run/libvirtd.pid")
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("/run/libvirtd.pid: %v", err)
	}
	return pid
}

// qemuCPU is the CPU time (seconds) of the QEMU processes of the domains
// of namespace ns (named guest=<ns>_<name> on their command lines).
func qemuCPU(t testing.TB, ns string) float64 {
	t.Helper()
	procs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	cpu := 0.0
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || !strings.Contains(string(cmdline), "guest="+ns+"_") {
			continue
		}
		cpu += processCPU(t, pid)
	}
	return cpu
}

// requestKind is one verb on one resource with one response code, as
// apiserver_request_total labels it.
type requestKind struct{ verb, resource, code string }

// write tells whether the verb changes what is stored.
func (k requestKind) write() bool {
	switch k.verb {
	case "POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY":
		return true
	}
	return false
}

// apiRequests reads the API server's apiserver_request_total from its
// /metrics, summed by verb, resource and code (over scopes and groups).
func apiRequests(ctx context.Context, t testing.TB, kube kubernetes.Interface) map[requestKind]float64 {
	t.Helper()
	body, err := kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatalf("the API server's /metrics: %v", err)
	}
	counts := map[requestKind]float64{}
	for _, line := range strings.Split(string(body), "\n") {
		series, value, ok := strings.Cut(line, " ")
		name, labels, _ := strings.Cut(series, "{")
		if !ok || name != "apiserver_request_total" {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Fatalf("/metrics line %q: %v", line, err)
		}
		k := requestKind{verb: label(labels, "verb"), resource: label(labels, "resource"), code: label(labels, "code")}
		if sub := label(labels, "subresource"); sub != "" {
			k.resource += "/" + sub
		}
		counts[k] += v
	}
	return counts
}

// label is the value of label name in a Prometheus series' labels
// (`a="x",b="y"}`).
func label(labels, name string) string {
	_, v, ok := strings.Cut(","+labels, ","+name+`="`)
	if !ok {
		return ""
	}
	v, _, _ = strings.Cut(v, `"`)
	return v
}
