package agent_test

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/agent"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
)

// A program that embeds the agent: node01's VMIs of the cluster that
// .ci/cluster.sh starts, under emulation, with their console and VNC on
// loopback ports, until SIGTERM. (Not run by go
// test: it needs the cluster and libvirtd; the end-to-end tests run the
// same through command nodeagent.)
func ExampleRun() {
	restConfig, err := clientcmd.BuildConfigFromFlags("", "/var/lib/vmi2libvirt/cluster/kubeconfig")
	if err != nil {
		panic(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	err = agent.Run(ctx, restConfig, agent.Config{
		Node:          "node01",
		Claim:         true,
		Launcher:      launcher.Config{Emulate: true, Layout: convert.HostLayout{StateDir: "/var/lib/vmi2libvirt/node01"}},
		HTTPAddress:   "127.0.0.1:0",
		StreamAddress: "127.0.0.1", // console and VNC ports per VMI, listed at /consoles
		Logger:        log,
	})
	if err != nil {
		log.Error(err.Error())
	}
}
