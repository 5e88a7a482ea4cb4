package controlplane_test

import (
	"context"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/controlplane"
)

// Run runs the control plane until SIGTERM, serving its webhooks on
// loopback with the certificate the webhook configurations trust.
func ExampleRun() {
	rest, err := clientcmd.BuildConfigFromFlags("", "/var/lib/vmi2libvirt/cluster/controlplane.kubeconfig")
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	err = controlplane.Run(ctx, rest, controlplane.Config{
		CertFile: "/var/lib/vmi2libvirt/cluster/pki/controlplane.crt",
		KeyFile:  "/var/lib/vmi2libvirt/cluster/pki/controlplane.key",
		Logger:   slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	if err != nil {
		log.Fatal(err)
	}
}
