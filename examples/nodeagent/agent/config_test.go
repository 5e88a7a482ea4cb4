package agent

import "testing"

// The node API's address must be one the control plane can dial, and
// never without its certificates.
func TestCheckAPIAddress(t *testing.T) {
	for _, c := range []struct {
		addr, certs, err string
	}{
		{"", "", ""},
		{"127.0.0.1:0", "/pki", ""},
		{"10.0.0.7:8186", "/pki", ""},
		{"node01.example:8186", "/pki", ""},
		{"", "/pki", "agent: Config.APICertDir without Config.APIAddress"},
		{"127.0.0.1:8186", "", `agent: Config.APIAddress "127.0.0.1:8186" needs Config.APICertDir (the node API is mutual TLS only)`},
		{"0.0.0.0:8186", "/pki", `agent: Config.APIAddress "0.0.0.0:8186": listen on an address the control plane can dial (it is written to the Node), not on every address`},
		{":8186", "/pki", `agent: Config.APIAddress ":8186": listen on an address the control plane can dial (it is written to the Node), not on every address`},
		{"127.0.0.1", "/pki", `agent: Config.APIAddress "127.0.0.1" is not host:port: address 127.0.0.1: missing port in address`},
	} {
		err := checkAPIAddress(c.addr, c.certs)
		if (err == nil) != (c.err == "") || err != nil && err.Error() != c.err {
			t.Errorf("checkAPIAddress(%q, %q): %v, want %q", c.addr, c.certs, err, c.err)
		}
	}
}
