package cmdutil

import (
	"fmt"
	"net"
)

// ListenLoopback listens on addr, which must be a loopback address (a VMI's
// VNC display has no password, so it is not served where others reach
// it). flag names the option addr came from, for the error.
func ListenLoopback(flag, addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, addr, err)
	}
	ip := net.ParseIP(host)
	if host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("%s %s: not a loopback address: the VNC display has no password, so it is served on loopback only (127.0.0.1:PORT); reach it from elsewhere through ssh -L", flag, addr)
	}
	return net.Listen("tcp", addr)
}
