// Command nodeagent is vmi2libvirt's node agent: KubeVirt's virt-handler
// role on controller-runtime, for the VirtualMachineInstances labelled
// kubevirt.io/nodeName=NAME on a Kubernetes API server.
//
//	go run . -kubeconfig FILE -node NAME [-emulate] [-claim] [-node-labels k=v,...] [-state-dir DIR]
//
// (from examples/nodeagent: it is a Go module of its own, so that
// controller-runtime never enters the library's module graph.)
//
// This first version connects: it checks that the API server serves KubeVirt's
// VirtualMachineInstance CRD (bash .ci/cluster.sh up installs it), starts a
// controller-runtime manager whose cache watches this node's VMIs, logs how
// many there are once the cache has synced, and exits 0 on SIGTERM or
// SIGINT. It does not run VMIs yet: the reconciler comes with the launcher's
// new API, and with it the use of -emulate, -claim, -node-labels and
// -state-dir, which are parsed, checked and logged now.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// nodeNameLabel binds a VMI to a node, as KubeVirt's scheduler does.
const nodeNameLabel = virtv1.NodeNameLabel

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "nodeagent: %v\n", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctrl.SetLogger(logr.FromSlogHandler(log.Handler()))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, cfg, log); err != nil {
		log.Error("nodeagent: " + err.Error())
		os.Exit(1)
	}
	log.Info("nodeagent: stopped")
}

// run connects to the API server and watches this node's VMIs until ctx
// ends.
func run(ctx context.Context, cfg config, log *slog.Logger) error {
	rest, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return fmt.Errorf("-kubeconfig: %w", err)
	}
	scheme, err := newScheme()
	if err != nil {
		return err
	}

	// Fail at once, with the remedy, when the CRD is not there: the cache
	// would retry its list for ever.
	direct, err := client.New(rest, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	mine := labels.SelectorFromSet(labels.Set{nodeNameLabel: cfg.Node})
	if err := direct.List(ctx, &virtv1.VirtualMachineInstanceList{}, client.MatchingLabelsSelector{Selector: mine}, client.Limit(1)); err != nil {
		if meta.IsNoMatchError(err) {
			return fmt.Errorf("the API server at %s does not serve kubevirt.io/v1 VirtualMachineInstances: install KubeVirt's CRD (bash .ci/cluster.sh up does): %w", rest.Host, err)
		}
		return fmt.Errorf("listing VirtualMachineInstances at %s: %w", rest.Host, err)
	}

	mgr, err := ctrl.NewManager(rest, manager.Options{
		Scheme: scheme,
		// Metrics and health endpoints come with the reconciler.
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&virtv1.VirtualMachineInstance{}: {Label: mine},
		}},
	})
	if err != nil {
		return err
	}
	err = mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		// Blocks until the cache holds this node's VMIs.
		if _, err := mgr.GetCache().GetInformer(ctx, &virtv1.VirtualMachineInstance{}); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		var vmis virtv1.VirtualMachineInstanceList
		if err := mgr.GetCache().List(ctx, &vmis); err != nil {
			return err
		}
		log.Info("nodeagent: watching VMIs", "node", cfg.Node, "selector", mine.String(), "vmis", len(vmis.Items),
			"server", rest.Host, "emulate", cfg.Emulate, "claim", cfg.Claim, "nodeLabels", cfg.NodeLabels.String(), "stateDir", cfg.StateDir)
		<-ctx.Done()
		return nil
	}))
	if err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// newScheme knows Kubernetes' built-in types and KubeVirt's kubevirt.io/v1.
func newScheme() (*runtime.Scheme, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := virtv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	return scheme, nil
}
