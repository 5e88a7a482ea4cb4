package vmi_test

import (
	"context"
	"log"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/controlplane/vmi"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/scheme"
)

// Add adds the VMI controller to a manager, which runs it.
func ExampleAdd() {
	s, err := scheme.New()
	if err != nil {
		log.Fatal(err)
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{Scheme: s})
	if err != nil {
		log.Fatal(err)
	}
	if err := vmi.Add(mgr, vmi.Options{}); err != nil {
		log.Fatal(err)
	}
	if err := mgr.Start(context.Background()); err != nil {
		log.Fatal(err)
	}
}
