package controlplane

import (
	"github.com/go-logr/logr"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/controlplane/admission"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/controlplane/vm"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/controlplane/vmi"
)

// component is one role of the control plane: what adds it to the
// control plane's manager and HTTPS server.
type component struct {
	name string
	add  func(*env) error
}

// components are the control plane's roles, added in this order by Run:
// virt-controller's VM and VMI controllers, and virt-api's admission
// webhooks (on the HTTPS server). virt-api's subresource API
// (v1.subresources.kubevirt.io: its handlers on e.mux, the aggregator's
// client authority on e.tls) is the next entry.
var components = []component{
	{"vm controller", func(e *env) error {
		return vm.Add(e.mgr, vm.Options{Logger: e.log})
	}},
	{"vmi controller", func(e *env) error {
		return vmi.Add(e.mgr, vmi.Options{Logger: e.log})
	}},
	{"admission webhooks", func(e *env) error {
		admission.Register(e.mux, admission.Options{Cluster: e.cfg.Cluster, Logger: logr.FromSlogHandler(e.log.Handler())})
		return nil
	}},
}
