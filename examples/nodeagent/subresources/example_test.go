package subresources_test

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/subresources"
)

// A control plane that serves the subresource API on virt-api's port, with
// the certificates .ci/cluster.sh makes, until SIGTERM. (Not run by go
// test: it needs the cluster; the end-to-end tests run it against a test
// cluster with the real virtctl.)
func ExampleServer_Run() {
	restConfig, err := clientcmd.BuildConfigFromFlags("", "/var/lib/vmi2libvirt/cluster/kubeconfig")
	if err != nil {
		panic(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	srv, err := subresources.New(ctx, restConfig, subresources.Config{
		Address:          subresources.DefaultAddress,
		CertDir:          "/var/lib/vmi2libvirt/cluster/pki/subresources",
		NodeAgentCertDir: "/var/lib/vmi2libvirt/cluster/pki/controlplane",
		Logger:           log,
	})
	if err != nil {
		log.Error(err.Error())
		return
	}
	if err := srv.Run(ctx); err != nil {
		log.Error(err.Error())
	}
}
