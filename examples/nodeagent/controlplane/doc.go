// Package controlplane is vmi2libvirt's control plane: KubeVirt's
// virt-controller and virt-api roles in one process, on controller-runtime,
// for the VirtualMachines and VirtualMachineInstances of a Kubernetes API
// server whose VMIs node agents (package agent) run. Run runs it; command
// controlplane (examples/nodeagent/cmd/controlplane) is Run behind flags.
//
//	err := controlplane.Run(ctx, restConfig, controlplane.Config{CertFile: "tls.crt", KeyFile: "tls.key"})
//
// # Components
//
// Run starts the components of components.go, in order, on one
// controller-runtime manager and one HTTPS server (Config.Address, loopback
// by default, its certificate Config.CertFile):
//
//   - the VM controller (package vm): each VM's VMI as its run strategy
//     (Always, RerunOnFailure, Once, Manual, Halted, or the legacy
//     spec.running) and its state change requests ask, the VM's status as
//     KubeVirt writes it;
//   - the VMI controller (package vmi): the topology hints of a new VMI
//     that needs a fixed TSC frequency, the end of a VMI deleted before any
//     node took it, and the finalizers KubeVirt's control plane takes off
//     ended VMIs;
//   - the admission webhooks (package admission) on the HTTPS server:
//     KubeVirt's defaults and validation, from the library's api package,
//     for VMs and VMIs, so that a misconfigured one is refused at once with
//     its field path.
//
// KubeVirt's subresource API (v1.subresources.kubevirt.io, what virtctl
// speaks) is the next component: its handlers on the same HTTPS server, as
// virt-api serves webhooks and subresources on one port.
//
// # Restarts
//
// Every decision is made from the API server's state, read through the
// manager's caches, and every write carries a precondition: the VM's
// resourceVersion for its status, the UID of the VMI it deletes, a test of
// the finalizers or annotations a JSON patch replaces. While the VM
// controller waits for its own creation or deletion of a VMI to reach its
// cache (KubeVirt's expectations), it does not act on that VM. A VM's VMIs
// all have the VM's name, so at most one exists at a time. A control plane
// stopped or killed at any point and started again finds in the API server
// what the old one did, and goes on from there: one VMI, never a second
// start of the same one.
//
// # Metrics and health
//
// Config.HTTPAddress (loopback) serves controller-runtime's metrics
// registry at /metrics (its controllers', work queues' and API client's
// metrics), /healthz, and /readyz (the caches synced and the HTTPS server
// serving), one sub-path per check, as the node agent's.
package controlplane
