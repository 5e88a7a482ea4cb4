// Command controlplane is vmi2libvirt's control plane: KubeVirt's
// virt-controller and virt-api roles in one process, on controller-runtime.
// It keeps each VirtualMachine's VirtualMachineInstance as its run strategy
// says, and serves the admission webhooks that give VMs and VMIs KubeVirt's
// defaults and refuse the misconfigured ones; the node agents run the VMIs.
//
//	go run ./cmd/controlplane -kubeconfig FILE -tls-cert-file FILE -tls-private-key-file FILE [-bind-address ADDR] [-metrics-address ADDR]
//
// (from examples/nodeagent.) It runs in the foreground until SIGTERM or
// SIGINT. The webhook configurations that send VMs and VMIs to it
// (examples/nodeagent/controlplane/admission.Configurations) name its
// -bind-address and the authority of its certificate; .ci/cluster.sh up
// installs them and starts it. Package controlplane
// (examples/nodeagent/controlplane) is the control plane itself, for
// programs that embed it.
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
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/controlplane"
)

func main() {
	cfg, err := parseFlags(os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "controlplane: %v\n", err)
		os.Exit(2)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctrl.SetLogger(logr.FromSlogHandler(log.Handler()))

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, cfg, log); err != nil {
		log.Error("controlplane: " + err.Error())
		os.Exit(1)
	}
	log.Info("controlplane: stopped")
}

// run connects to the API server and runs the control plane until ctx
// ends.
func run(ctx context.Context, cfg config, log *slog.Logger) error {
	rest, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return fmt.Errorf("-kubeconfig: %w", err)
	}
	return controlplane.Run(ctx, rest, controlplane.Config{
		CertFile:         cfg.CertFile,
		KeyFile:          cfg.KeyFile,
		Address:          cfg.BindAddress,
		HTTPAddress:      cfg.MetricsAddress,
		NodeAgentCertDir: cfg.NodeAgentCerts,
		NodeGracePeriod:  cfg.NodeGrace,
		Scheduling:       cfg.Scheduling,
		Logger:           log,
	})
}
