package main

import (
	"context"
	"fmt"
	"regexp"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// BenchmarkCreateToRunning measures the whole path through Kubernetes: from
// creating VMIs bound to a running agent's node until a client watching the
// API server sees each one's status Running — the API server's watch to
// the agent, its reconcile and the launcher's Sync, the status patch, the
// watch back — for one VMI and for ten created at once. Beside the
// launcher's own BenchmarkSyncToRunning (Sync until its Watch reports
// Running, for one VMI) and BenchmarkLauncherSyncToRunning below (the same
// for ten Synced at once), the difference is the agent's overhead.
// Deleting the VMIs is not timed.
//
//	(cd examples/nodeagent && go test -run '^$' -bench ToRunning -benchtime 3x)
func BenchmarkCreateToRunning(b *testing.B) {
	w := newWorld(b)
	node, dir := uniqueName("bench"), stateDir(b)
	w.startNode(b, node, dir)
	watcher, err := client.NewWithWatch(w.cluster.Config, client.Options{Scheme: w.client.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("%dVMIs", n), func(b *testing.B) {
			ns := w.namespace(b, "bench")
			var all, each time.Duration
			for i := range b.N {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				events, err := watcher.Watch(ctx, &virtv1.VirtualMachineInstanceList{}, client.InNamespace(ns))
				if err != nil {
					b.Fatal(err)
				}
				created := map[string]time.Time{}
				start := time.Now()
				for j := range n {
					vmi := bound(guestVMI(ns, fmt.Sprintf("bench-%d-%d", i, j), 0, testguest.ActionIgnore), node)
					w.create(b, vmi)
					created[vmi.Name] = time.Now()
				}
				for running := 0; running < n; {
					ev, ok := <-events.ResultChan()
					if !ok {
						b.Fatalf("the watch ended with %d of %d VMIs Running", running, n)
					}
					vmi, isVMI := ev.Object.(*virtv1.VirtualMachineInstance)
					if !isVMI || ev.Type != watch.Modified || vmi.Status.Phase != virtv1.Running {
						continue
					}
					if at, ok := created[vmi.Name]; ok {
						each += time.Since(at)
						delete(created, vmi.Name)
						running++
					}
				}
				all += time.Since(start)
				b.StopTimer()
				events.Stop()
				cancel()
				for j := range n {
					if err := w.client.Delete(context.Background(), w.get(b, ns, fmt.Sprintf("bench-%d-%d", i, j))); err != nil {
						b.Fatal(err)
					}
				}
				for j := range n {
					w.waitGone(b, ns, fmt.Sprintf("bench-%d-%d", i, j), 2*time.Minute)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(all.Milliseconds())/float64(b.N), "ms-all-Running/op")
			b.ReportMetric(float64(each.Milliseconds())/float64(b.N*n), "ms-to-Running/VMI")
		})
	}
}

// BenchmarkLauncherSyncToRunning is the baseline of
// BenchmarkCreateToRunning without Kubernetes: the launcher alone, on the
// same host, Syncs the same VMIs (ten at once from ten goroutines, as the
// agent's workers would if it had ten) and its Watch reports each Running.
func BenchmarkLauncherSyncToRunning(b *testing.B) {
	hosttest.Root(b)
	hosttest.Libvirt(b, libvirtURI)
	hosttest.LockLibvirt(b, false)
	testguest.Require(b, convert.DefaultImageStore)
	ctx := context.Background()
	l, err := launcher.New(ctx, launcher.Config{URI: libvirtURI, Owner: uniqueName("bench"), Emulate: true,
		Layout: convert.HostLayout{StateDir: stateDir(b)}})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	events := l.Watch(watchCtx)
	ns := uniqueName("bench")
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("%dVMIs", n), func(b *testing.B) {
			var all, each time.Duration
			for i := range b.N {
				started := map[string]time.Time{}
				errs := make(chan error, n)
				start := time.Now()
				for j := range n {
					vmi := guestVMI(ns, fmt.Sprintf("bench-%d-%d-%d", n, i, j), 0, testguest.ActionIgnore)
					started[vmi.Name] = time.Now()
					go func() { errs <- l.Sync(ctx, vmi) }()
				}
				for running := 0; running < n; {
					ev := <-events
					if at, ok := started[ev.Name]; ok && ev.Status.Phase == virtv1.Running {
						each += time.Since(at)
						delete(started, ev.Name)
						running++
					}
				}
				all += time.Since(start)
				b.StopTimer()
				for range n {
					if err := <-errs; err != nil {
						b.Fatal(err)
					}
				}
				for j := range n {
					vmi := guestVMI(ns, fmt.Sprintf("bench-%d-%d-%d", n, i, j), 0, testguest.ActionIgnore)
					if err := l.Delete(ctx, vmi); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(all.Milliseconds())/float64(b.N), "ms-all-Running/op")
			b.ReportMetric(float64(each.Milliseconds())/float64(b.N*n), "ms-to-Running/VMI")
		})
	}
}

// BenchmarkVirtctlConsole measures what a person waits for at `virtctl
// console`: from starting virtctl until the guest's shell has answered a
// command typed at once — virtctl's client, the API server's aggregation
// layer, the subresource API server, the node agent's API over mutual TLS
// and the launcher's console attachment, and back — with the time until
// virtctl says it is connected beside it. Leaving (Ctrl-]) is not timed.
//
//	(cd examples/nodeagent && go test -run '^$' -bench VirtctlConsole -benchtime 10x)
func BenchmarkVirtctlConsole(b *testing.B) {
	w := newVirtctlWorld(b)
	ns := w.namespace(b, "bench")
	w.runGuest(b, ns, "tiny")
	var connect time.Duration
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		c := w.console(b, "", ns, "tiny")
		c.connected(b, time.Minute)
		connect += time.Since(start)
		want := fmt.Sprint(i * 7)
		if got := c.ask(b, fmt.Sprintf("echo bench-$((%d*7))", i), regexp.MustCompile(`\nbench-([0-9]+)\r?\n`), time.Minute); got != want {
			b.Fatalf("the shell answered %s, want %s", got, want)
		}
		b.StopTimer()
		c.leave(b)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(connect.Milliseconds())/float64(b.N), "ms-to-connected/op")
	if err := w.client.Delete(context.Background(), w.get(b, ns, "tiny")); err != nil {
		b.Fatal(err)
	}
	w.waitGone(b, ns, "tiny", 2*time.Minute)
}

// BenchmarkVirtctlStartRestart measures what a person waits for at
// `virtctl start` and `virtctl restart` of a VirtualMachine: from starting
// virtctl until a client watching the API server sees the VM's VMI
// Running (start: virtctl, the subresource API's patch of the VM, the VM
// controller's new VMI, its webhooks, the agent's claim and Sync), and
// again with a new UID (restart: the stop request, the old guest's ACPI
// shutdown and the deletion of its VMI, then the same start). One op is
// a start and a restart; `virtctl stop` after them is not timed.
//
//	(cd examples/nodeagent && go test -run '^$' -bench VirtctlStartRestart -benchtime 3x -benchmem)
func BenchmarkVirtctlStartRestart(b *testing.B) {
	w, vw := newVirtctlVMWorld(b)
	ns := w.namespace(b, "bench")
	vw.createVM(b, vw.guestVM(ns, "vm1", virtv1.RunStrategyHalted, 30, testguest.ActionACPI))
	watcher, err := client.NewWithWatch(w.cluster.Config, client.Options{Scheme: w.client.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	var start, restart time.Duration
	b.ResetTimer()
	for range b.N {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		events, err := watcher.Watch(ctx, &virtv1.VirtualMachineInstanceList{}, client.InNamespace(ns))
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		w.mustRun(b, "-n", ns, "start", "vm1")
		first := waitRunningVMI(b, events.ResultChan(), "vm1", "")
		start += time.Since(t0)
		b.StopTimer()
		waitConsole(b, w.dir, ns, "vm1", testguest.ShellMarker, bootTimeout)
		b.StartTimer()

		t0 = time.Now()
		w.mustRun(b, "-n", ns, "restart", "vm1")
		waitRunningVMI(b, events.ResultChan(), "vm1", first)
		restart += time.Since(t0)
		b.StopTimer()
		events.Stop()
		cancel()
		waitConsole(b, w.dir, ns, "vm1", testguest.ShellMarker, bootTimeout)
		w.mustRun(b, "-n", ns, "stop", "vm1")
		vw.waitVM(b, ns, "vm1", "Stopped", 2*time.Minute, stoppedVM)
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(start.Milliseconds())/float64(b.N), "ms-start-to-Running/op")
	b.ReportMetric(float64(restart.Milliseconds())/float64(b.N), "ms-restart-to-Running/op")
	vw.deleteVM(b, ns, "vm1")
}

// waitRunningVMI reads VMI events until the VMI name, with another UID
// than not, is Running, and returns its UID.
func waitRunningVMI(b *testing.B, events <-chan watch.Event, name string, not types.UID) types.UID {
	b.Helper()
	for ev := range events {
		vmi, ok := ev.Object.(*virtv1.VirtualMachineInstance)
		if ok && vmi.Name == name && vmi.UID != not && vmi.Status.Phase == virtv1.Running {
			return vmi.UID
		}
	}
	b.Fatalf("the watch ended before VMI %s (not %q) ran", name, not)
	return ""
}
