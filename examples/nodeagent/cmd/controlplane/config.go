package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/controlplane"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/controlplane/node"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
)

// config is what the command line says.
type config struct {
	Kubeconfig     string        // kubeconfig file of the API server, with the control plane's credentials
	CertFile       string        // the HTTPS server's certificate (PEM)
	KeyFile        string        // its private key (PEM)
	BindAddress    string        // where the HTTPS server (the webhooks, the subresource API) listens
	MetricsAddress string        // where /metrics, /healthz and /readyz are served
	NodeAgentCerts string        // the node API's client certificate folder
	NodeGrace      time.Duration // how old a Node's heartbeat may be before the node is dead

	// Scheduling are the KubeVirt feature gates that change what a
	// migration's target node must offer (-feature-gates).
	Scheduling nodeapi.Scheduling
}

// parseFlags reads the command line (without the program name). Errors name
// the flag; -h prints the usage to stderr and returns flag.ErrHelp.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("controlplane", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "kubeconfig `FILE` of the API server, with the control plane's credentials (required)")
	fs.StringVar(&cfg.CertFile, "tls-cert-file", "", "`FILE` holding the HTTPS server's certificate, PEM, reloaded when it changes (required)")
	fs.StringVar(&cfg.KeyFile, "tls-private-key-file", "", "`FILE` holding the certificate's private key, PEM (required)")
	fs.StringVar(&cfg.BindAddress, "bind-address", controlplane.DefaultAddress,
		"`HOST:PORT` of the HTTPS server: the admission webhooks and the subresource API (port 0: any free port, logged)")
	fs.StringVar(&cfg.NodeAgentCerts, "nodeagent-certs", "",
		"`DIR` of the node agents' API client certificate and authority (tls.crt, tls.key, ca.crt); empty: no subresource API")
	fs.StringVar(&cfg.MetricsAddress, "metrics-address", controlplane.DefaultHTTPAddress,
		"`ADDR` serving /metrics, /healthz and /readyz (port 0: any free port, logged; off: none)")
	fs.DurationVar(&cfg.NodeGrace, "node-grace-period", node.DefaultGracePeriod,
		"how old a Node's kubevirt.io/heartbeat may be, `DURATION`, before its VMIs fail (NodeUnresponsive) and are replaced elsewhere")
	fs.Func("feature-gates", "KubeVirt feature gates that change what a migration's target node must offer, `NAME,...`: HypervStrictCheck (give the node agents the same)", func(s string) error {
		sched, err := nodeapi.ParseFeatureGates(s)
		cfg.Scheduling = sched
		return err
	})
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: controlplane -kubeconfig FILE -tls-cert-file FILE -tls-private-key-file FILE [-bind-address HOST:PORT] [-metrics-address ADDR] [-nodeagent-certs DIR] [-node-grace-period DURATION] [-feature-gates NAME,...]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for _, f := range []struct{ name, value string }{
		{"-kubeconfig", cfg.Kubeconfig}, {"-tls-cert-file", cfg.CertFile}, {"-tls-private-key-file", cfg.KeyFile},
	} {
		if f.value == "" {
			return config{}, errors.New(f.name + ": required")
		}
	}
	if _, _, err := net.SplitHostPort(cfg.BindAddress); err != nil {
		return config{}, fmt.Errorf("-bind-address: invalid value %q: %v", cfg.BindAddress, err)
	}
	if cfg.MetricsAddress != "off" {
		if _, _, err := net.SplitHostPort(cfg.MetricsAddress); err != nil {
			return config{}, fmt.Errorf("-metrics-address: invalid value %q: %v", cfg.MetricsAddress, err)
		}
	}
	if cfg.NodeGrace <= 0 {
		return config{}, fmt.Errorf("-node-grace-period: invalid value %s: must be positive", cfg.NodeGrace)
	}
	return cfg, nil
}
