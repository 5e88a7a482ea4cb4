// Command nodeagent is vmi2libvirt's node agent: KubeVirt's virt-handler
// role on controller-runtime. It runs the VirtualMachineInstances labelled
// kubevirt.io/nodeName=NAME on a Kubernetes API server with the library's
// launcher, on this machine's libvirt, and writes their status back.
//
//	go run . -kubeconfig FILE -node NAME [-emulate] [-claim] [-node-labels k=v,...] [-state-dir DIR] [-metrics-address ADDR] [-stream-address IP] [-stream-origins HOST:PORT,...] [-api-address HOST:PORT -api-certs DIR]
//
// (from examples/nodeagent: it is a Go module of its own, so that
// controller-runtime never enters the library's module graph.) It runs in
// the foreground until SIGTERM or SIGINT, and leaves the guests running
// when it stops: the next agent of the same node adopts them. Package
// agent (examples/nodeagent/agent) is the agent itself, for programs that
// embed it.
//
// With -api-address and -api-certs it serves the node API (package
// nodeapi, mutual TLS) through which the control plane reaches its VMIs:
// what virtctl console, vnc, pause, unpause, soft-reboot and guestosinfo
// ask for.
//
// With -stream-address 127.0.0.1 each running VMI gets loopback ports of
// its own for its serial console and its VNC display, listed as JSON at
// /consoles of the metrics address:
//
//	curl -s http://127.0.0.1:8080/consoles/default/tiny
//	socat -,rawer,escape=0x1d tcp:127.0.0.1:PORT   # the "console" port; Ctrl-] leaves
//	vncviewer 127.0.0.1::PORT                       # the "vnc" port
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
	virtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/agent"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
)

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

// testHostFacts, set only by this package's tests (TestMain), are the host
// facts the Node's labels are made of instead of the launcher's, so that a
// test runs two agents whose nodes offer different CPU models on one
// libvirtd. Never a flag: a node's labels are its host's.
var testHostFacts *convert.HostFacts

// run connects to the API server and runs the agent until ctx ends.
func run(ctx context.Context, cfg config, log *slog.Logger) error {
	rest, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
	if err != nil {
		return fmt.Errorf("-kubeconfig: %w", err)
	}
	var labeller agent.NodeLabeller // nil: the launcher's facts
	if f := testHostFacts; f != nil {
		labeller = agent.HostLabels{Static: cfg.NodeLabels, Facts: func(context.Context) (convert.HostFacts, error) { return *f, nil }}
	}
	return agent.Run(ctx, rest, agent.Config{
		Node:       cfg.Node,
		Claim:      cfg.Claim,
		NodeLabels: cfg.NodeLabels,
		Scheduling: cfg.Scheduling,
		Launcher: launcher.Config{
			URI:     cfg.LibvirtURI,
			Emulate: cfg.Emulate,
			Layout:  convert.HostLayout{StateDir: cfg.StateDir},
			// A VMI reaches the claims of its own namespace only.
			ClaimsOf: func(vmi *virtv1.VirtualMachineInstance) map[string]convert.DiskSource {
				return cfg.VolumeClaims[vmi.Namespace]
			},
		},
		HTTPAddress:        cfg.MetricsAddress,
		StreamAddress:      cfg.StreamAddress,
		StreamOrigins:      cfg.StreamOrigins,
		APIAddress:         cfg.APIAddress,
		APICertDir:         cfg.APICerts,
		HeartbeatInterval:  cfg.HeartbeatInterval,
		MigrationBandwidth: cfg.MigrationBandwidth,
		Labeller:           labeller,
		Logger:             log,
	})
}
