package controlplane

import (
	"github.com/go-logr/logr"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/controlplane/admission"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/controlplane/evacuation"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/controlplane/migration"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/controlplane/node"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/controlplane/vm"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/controlplane/vmi"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/subresources"
)

// component is one role of the control plane: what adds it to the
// control plane's manager and HTTPS server.
type component struct {
	name string
	add  func(*env) error
}

// components are the control plane's roles, added in this order by Run:
// virt-controller's VM, VMI, node, migration and evacuation controllers
// (the last two where the API server serves migrations), and virt-api's admission
// webhooks and subresource API (v1.subresources.kubevirt.io: what virtctl
// speaks), on one HTTPS server as virt-api serves them — the subresource
// API asks the aggregation layer's client certificate in its TLS
// configuration, and only with Config.NodeAgentCertDir: it reaches the
// node agents over mutual TLS.
var components = []component{
	{"vm controller", func(e *env) error {
		return vm.Add(e.mgr, vm.Options{Logger: e.log})
	}},
	{"vmi controller", func(e *env) error {
		return vmi.Add(e.mgr, vmi.Options{Logger: e.log})
	}},
	{"node controller", func(e *env) error {
		return node.Add(e.mgr, node.Options{GracePeriod: e.cfg.NodeGracePeriod, Logger: e.log})
	}},
	{"migration controller", func(e *env) error {
		if !e.serves(&v1.VirtualMachineInstanceMigrationList{}) {
			e.log.Info("no migration controller: the API server does not serve kubevirt.io/v1 VirtualMachineInstanceMigrations")
			return nil
		}
		return migration.Add(e.mgr, migration.Options{Scheduling: e.cfg.Scheduling, Logger: e.log})
	}},
	{"evacuation controller", func(e *env) error {
		if !e.serves(&v1.VirtualMachineInstanceMigrationList{}) {
			return nil
		}
		return evacuation.Add(e.mgr, evacuation.Options{Cluster: e.cfg.Cluster, Logger: e.log})
	}},
	{"admission webhooks", func(e *env) error {
		admission.Register(e.mux, admission.Options{Cluster: e.cfg.Cluster, KubeVirtUsers: []string{e.user}, Logger: logr.FromSlogHandler(e.log.Handler())})
		return nil
	}},
	{"subresource API", func(e *env) error {
		if e.cfg.NodeAgentCertDir == "" {
			e.log.Info("no subresource API: Config.NodeAgentCertDir names no node API certificates")
			return nil
		}
		srv, err := subresources.New(e.ctx, e.restConfig, subresources.Config{NodeAgentCertDir: e.cfg.NodeAgentCertDir, Logger: e.log})
		if err != nil {
			return err
		}
		srv.Register(e.mux)
		srv.RequestClientCertificates(e.tls)
		return e.mgr.Add(srv)
	}},
}
