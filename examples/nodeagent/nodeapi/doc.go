// Package nodeapi is the contract between vmi2libvirt's control plane and
// its node agents: the node agent's HTTPS API, through which the control
// plane reaches a VMI running on the agent's node — its serial console and
// VNC display as WebSockets, pause, unpause, soft reboot and the guest
// agent's information. It is what KubeVirt's virt-handler serves to
// virt-api (its console server, port 8186 on each node), with the same
// paths, methods and status codes, so that the control plane's subresource
// API (package subresources) answers virtctl as virt-api does.
//
// # Finding an agent
//
// An agent that serves the API writes the address it listens on, host:port,
// in the annotation AddressAnnotation of its Node object (creating the Node
// when there is none, as a kubelet registers its node); the control plane
// reads the annotation of the Node a VMI's status.nodeName names. Several
// agents on one machine each listen on a port of their own. The agent
// removes the annotation when it stops.
//
// # Mutual TLS
//
// Every connection is mutual TLS, with one certificate authority for both
// ends (a folder's CAFile): the agent serves a certificate of ServerName
// (its DNS name, extended key usage server authentication) and accepts only
// client certificates of that authority with the common name ClientName
// (extended key usage client authentication) — the control plane's; the
// control plane verifies the agent's certificate against the authority with
// ServerName, whatever address it dialled. All agents share the one server
// identity, as KubeVirt's virt-handlers share theirs
// ("kubevirt.io:system:node:virt-handler"). A folder holds a certificate and
// its key as a Kubernetes TLS secret does (CertFile, KeyFile) and the
// authority (CAFile); ServerTLS and ClientTLS read one.
//
//	srv := &http.Server{Handler: h, TLSConfig: must(nodeapi.ServerTLS("/etc/vmi2libvirt/nodeagent"))}
//	c, err := nodeapi.NewClient("/etc/vmi2libvirt/controlplane-client")
//	err = c.Put(ctx, "10.0.0.7:8186", "default", "tiny", nodeapi.Pause)
package nodeapi
