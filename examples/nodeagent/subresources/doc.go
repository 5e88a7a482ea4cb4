// Package subresources is KubeVirt's subresource API — virt-api's
// subresources.kubevirt.io, what virtctl speaks — as an aggregated API
// server, for vmi2libvirt's control plane. The Kubernetes API server
// proxies every request under /apis/subresources.kubevirt.io/ to it
// through the APIServices v1.subresources.kubevirt.io and
// v1alpha3.subresources.kubevirt.io; it answers with virt-api's paths,
// bodies and status codes, so that the real virtctl works unchanged.
//
//	srv, err := subresources.New(ctx, restConfig, subresources.Config{
//		CertDir:          "/etc/vmi2libvirt/subresources",  // tls.crt, tls.key
//		NodeAgentCertDir: "/etc/vmi2libvirt/controlplane",  // tls.crt, tls.key, ca.crt
//	})
//	err = srv.Run(ctx) // until ctx ends
//
// A program with an HTTPS server of its own (the control plane, whose
// server also serves the admission webhooks, as virt-api's does) mounts it
// instead: New without CertDir, then
//
//	srv.Register(mux)                   // its paths on the program's mux
//	srv.RequestClientCertificates(tlsConfig) // the aggregation layer's certificate is asked for
//	err = mgr.Add(srv)                  // Start: follows the request-header ConfigMap
//
// # What it serves
//
// Discovery: GET / (the root paths), /apis, /apis/subresources.kubevirt.io
// and, per version, the resource list virt-api serves (the API server's
// discovery reads it), /version and /healthz. Virtual machines: PUT
// virtualmachines/NAME/start, stop, restart and migrate, with virt-api's
// bodies (StartOptions, StopOptions with gracePeriod, RestartOptions with
// gracePeriodSeconds, MigrateOptions) and its answers: 202 Accepted, 409
// Conflict, 404, 400. They write what virt-api writes — the VM's
// runStrategy (Halted and Always, or the legacy running), or start and
// stop requests in status.stateChangeRequests, tested against the VM as
// read (JSON patches with test operations: a VM changed meanwhile is a
// conflict), the VMI's terminationGracePeriodSeconds for a stop with a
// grace period or a forced restart, a VirtualMachineInstanceMigration for
// migrate — and leave the rest to the VM controller. Volume hotplug (PUT
// virtualmachines/NAME/addvolume and removevolume, and the same on
// virtualmachineinstances, with AddVolumeOptions and RemoveVolumeOptions:
// 202, or virt-api's 400 and 409) is virt-api's declarative hotplug: the
// VM's template, or the spec of a running VMI no VM owns, gets the
// hot-pluggable volume and its disk (or loses them); the VM controller
// carries a template's to its running VMI, and the node agent attaches or
// detaches the disk of a VMI whose spec changed. Virtual machine
// instances: PUT virtualmachineinstances/NAME/pause, unpause and
// softreboot (200), GET guestosinfo, userlist and filesystemlist, and the
// WebSockets GET console and vnc (subprotocol plain.kubevirt.io, every
// message binary: raw serial bytes, or RFB), each first checked against
// the VMI as virt-api checks it — a console asked before the VMI runs is
// 400, which virtctl console retries — then sent to the node agent of the
// VMI's node (status.nodeName) through the node API (package nodeapi):
// the agent's address is its Node's nodeapi.AddressAnnotation, the
// connection mutual TLS with the certificates of Config.NodeAgentCertDir.
// virt-api's other subresources (freeze, reset, portforward,
// screenshots...) are listed and answered 404.
//
// # Authentication and authorization
//
// As virt-api's. A request is authenticated only when it comes through
// the API server's aggregation layer: the client certificate that the
// request-header authority of the ConfigMap
// kube-system/extension-apiserver-authentication signed, with a common
// name it allows (--requestheader-allowed-names), and the user, groups
// and extras of the request headers it names (X-Remote-User...).
// k8s.io/apiserver's request-header authenticator checks them, following
// the ConfigMap as it changes. Every request but discovery, version and
// health is then authorized with a SubjectAccessReview of the user: verb
// from the method (GET: get, PUT: update), resource virtualmachineinstances
// or virtualmachines, its subresource (console, vnc, pause, start...),
// group subresources.kubevirt.io — the names of KubeVirt's RBAC roles
// (kubevirt.io:edit grants get on virtualmachineinstances/console and
// update on virtualmachines/start...). The API server has authorized the
// same request before proxying it (a user without the right gets its 403);
// a refusal here is virt-api's 401 with the review's reason. DefaultRBAC is
// KubeVirt's default role, which lets every authenticated user read the
// version.
//
// The server's own certificate (Config.CertDir) must name the Service of
// the APIServices (SERVICE.NAMESPACE.svc) and be signed by their caBundle;
// it is read again when its files change.
package subresources

import _ "embed"

// DefaultRBAC is KubeVirt's default ClusterRole and ClusterRoleBinding
// (kubevirt.io:default): every authenticated user may get the subresource
// API's version and guestfs. YAML, two documents.
//
//go:embed default-rbac.yaml
var DefaultRBAC []byte
