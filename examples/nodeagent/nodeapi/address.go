package nodeapi

import (
	"fmt"
	"net"

	k8sv1 "k8s.io/api/core/v1"
)

// AddressAnnotation is the annotation of a Node that holds where its agent
// serves the API: host:port.
const AddressAnnotation = "vmi2libvirt.github.com/nodeagent-api"

// Finalizer is a node agent's finalizer on each VMI it runs: while it is
// there, the VMI's guest or its traces may still be on the node. The
// control plane takes it off a VMI whose node it declares dead (the agent
// that comes back removes the traces itself).
const Finalizer = "vmi2libvirt.github.com/nodeagent"

// AddressOf returns the address the agent of node serves the API at, from
// its AddressAnnotation; an error names the node when it has none (no
// agent with the API runs there) or the value is not host:port.
func AddressOf(node *k8sv1.Node) (string, error) {
	addr, ok := node.Annotations[AddressAnnotation]
	if !ok {
		return "", fmt.Errorf("node %s has no annotation %s: no node agent serving the API runs there", node.Name, AddressAnnotation)
	}
	if err := CheckAddress(addr); err != nil {
		return "", fmt.Errorf("node %s: annotation %s: %w", node.Name, AddressAnnotation, err)
	}
	return addr, nil
}

// CheckAddress tells whether addr is an address another machine can dial:
// host:port with a host (not an unspecified IP such as 0.0.0.0) and a
// port other than 0.
func CheckAddress(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %w", addr, err)
	}
	if host == "" || port == "" || port == "0" {
		return fmt.Errorf("%q lacks a host or a port", addr)
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("%q: %s is no address to dial (listen on the IP the control plane reaches)", addr, host)
	}
	return nil
}
