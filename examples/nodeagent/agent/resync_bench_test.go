package agent

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/testcluster"
	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// resyncN is how many idle VMIs BenchmarkResync100 runs.
var resyncN = flag.Int("resync.n", 100, "BenchmarkResync100: how many idle VMIs")

// resyncRounds is how many times BenchmarkResync100 measures its node,
// started once (a start of 100 guests takes minutes).
const resyncRounds = 3

// BenchmarkResync100 measures what the agent spends on a resync of a node
// of 100 idle VMIs (-resync.n): what controller-runtime's periodic resync
// makes it do, the vmi controller's Reconcile of every VMI of the node
// (the cache's copy, the memo, the launcher's Status, the status compared
// with the object's). The agent is the real one (build, as Run makes it),
// its manager started, against a real kube-apiserver and etcd and the
// system libvirtd; the VMIs are test guests started paused (startStrategy:
// Paused), created and run once before the timing, and removed after it.
// One op is one resync of all of them, measured in resyncRounds rounds;
// cpu-ms/op is the process's CPU time (user and system, getrusage) over
// it, writes/op the VMIs whose object changed (none should).
//
//	(cd examples/nodeagent && go test ./agent -run '^$' -bench Resync100 -benchtime 20x -benchmem)
func BenchmarkResync100(b *testing.B) {
	r, keys, api := idleNode(b, *resyncN)
	ctx := context.Background()
	for range resyncRounds {
		b.Run(fmt.Sprintf("%dVMIs", len(keys)), func(b *testing.B) {
			before := resourceVersions(b, api, keys)
			b.ResetTimer()
			var cpu time.Duration
			for range b.N {
				c0 := processCPU(b)
				resync(ctx, b, r, keys)
				cpu += processCPU(b) - c0
			}
			b.StopTimer()
			after := resourceVersions(b, api, keys)
			writes := 0
			for k, rv := range before {
				if after[k] != rv {
					writes++
				}
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(writes)/float64(b.N), "writes/op")
		})
	}
}

// resync reconciles every VMI of keys once, as a resync makes the vmi
// controller's workers do.
func resync(ctx context.Context, tb testing.TB, r *vmiReconciler, keys []types.NamespacedName) {
	tb.Helper()
	for _, k := range keys {
		res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: k})
		if err != nil || res != (reconcile.Result{}) {
			tb.Fatalf("reconcile %s: %+v, %v", k, res, err)
		}
	}
}

// processCPU is the CPU time this process has used, user and system.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// resourceVersions reads the resourceVersion of each VMI of keys from the
// API server.
func resourceVersions(tb testing.TB, api client.Reader, keys []types.NamespacedName) map[types.NamespacedName]string {
	tb.Helper()
	out := map[types.NamespacedName]string{}
	for _, k := range keys {
		var vmi v1.VirtualMachineInstance
		if err := api.Get(context.Background(), k, &vmi); err != nil {
			tb.Fatal(err)
		}
		out[k] = vmi.ResourceVersion
	}
	return out
}

// idleNode starts a test cluster and an agent of a node of its own, makes
// it run n test guests started paused, and returns the agent's vmi
// reconciler, once each VMI is Running and has been reconciled once more,
// with the VMIs' keys and a client of the API server. Cleanup stops the agent and removes the node's
// domains.
func idleNode(tb testing.TB, n int) (*vmiReconciler, []types.NamespacedName, client.Client) {
	tb.Helper()
	const uri = "qemu:///system"
	hosttest.Root(tb)
	hosttest.Libvirt(tb, uri)
	hosttest.LockLibvirt(tb, false)
	if _, err := testguest.Install(convert.DefaultImageStore, testguest.Options{}); err != nil {
		hosttest.Missing(tb, "the test guest cannot be built: %v", err)
	}
	cluster := testcluster.Start(tb)
	node := fmt.Sprintf("resync-%d", time.Now().UnixNano())
	dir := hosttest.Dir(tb, "/var/lib/vmi2libvirt/e2e-nodeagent", "resync-")
	tb.Cleanup(func() { removeDomainsOf(tb, uri, node) })

	ctx, cancel := context.WithCancel(context.Background())
	a, err := build(ctx, cluster.Config, Config{Node: node, HTTPAddress: "off",
		Launcher: launcher.Config{URI: uri, Emulate: true, Layout: convert.HostLayout{StateDir: dir}}})
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.mgr.Start(ctx) }()
	tb.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("agent: %v", err)
		}
		a.close()
	})

	direct, err := client.New(cluster.Config, client.Options{Scheme: a.mgr.GetScheme()})
	if err != nil {
		tb.Fatal(err)
	}
	ns := &k8sv1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: node}}
	if err := direct.Create(ctx, ns); err != nil {
		tb.Fatal(err)
	}
	keys := make([]types.NamespacedName, n)
	for i := range keys {
		vmi := idleVMI(ns.Name, fmt.Sprintf("idle-%03d", i), node)
		if err := direct.Create(ctx, vmi); err != nil {
			tb.Fatal(err)
		}
		keys[i] = client.ObjectKeyFromObject(vmi)
	}
	start := time.Now()
	for {
		var list v1.VirtualMachineInstanceList
		if err := direct.List(ctx, &list, client.InNamespace(ns.Name)); err != nil {
			tb.Fatal(err)
		}
		running := 0
		for _, vmi := range list.Items {
			if vmi.Status.Phase == v1.Running {
				running++
			}
		}
		if running == n {
			break
		}
		if time.Since(start) > 20*time.Minute {
			tb.Fatalf("%d of %d VMIs Running after %s", running, n, time.Since(start))
		}
		time.Sleep(2 * time.Second)
	}
	tb.Logf("%d VMIs Running %s after their creation", n, time.Since(start).Round(time.Second))
	resync(ctx, tb, a.runner, keys) // the memo holds each as synced
	return a.runner, keys, direct
}

// idleVMI is a VMI of the test guest, started paused, bound to node.
func idleVMI(ns, name, node string) *v1.VirtualMachineInstance {
	grace := int64(0)
	paused := v1.StartStrategyPaused
	return &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{v1.NodeNameLabel: node}},
		Spec: v1.VirtualMachineInstanceSpec{
			StartStrategy:                 &paused,
			TerminationGracePeriodSeconds: &grace,
			Domain: v1.DomainSpec{
				Memory: &v1.Memory{Guest: resource.NewQuantity(128<<20, resource.BinarySI)},
				Firmware: &v1.Firmware{KernelBoot: &v1.KernelBoot{
					KernelArgs: testguest.KernelArgs + " " + testguest.ActionIgnore,
					Container: &v1.KernelBootContainer{
						Image:      testguest.Ref,
						KernelPath: testguest.KernelPath,
						InitrdPath: testguest.InitrdPath,
					},
				}},
			},
		},
	}
}

// removeDomainsOf destroys and undefines every domain whose marks name
// owner.
func removeDomainsOf(tb testing.TB, uri, owner string) {
	conn, err := libvirt.NewConnect(uri)
	if err != nil {
		tb.Errorf("cleanup: %v", err)
		return
	}
	defer conn.Close()
	doms, err := conn.ListAllDomains(0)
	if err != nil {
		tb.Errorf("cleanup: list domains: %v", err)
		return
	}
	for i := range doms {
		dom := &doms[i]
		meta, _ := dom.GetMetadata(libvirt.DOMAIN_METADATA_ELEMENT, hostplan.MetadataNS, libvirt.DOMAIN_AFFECT_CONFIG)
		if strings.Contains(meta, "<owner>"+owner+"</owner>") {
			_ = dom.Destroy()
			if err := dom.UndefineFlags(libvirt.DOMAIN_UNDEFINE_NVRAM); err != nil {
				tb.Errorf("cleanup: undefine: %v", err)
			}
		}
		_ = dom.Free()
	}
}
