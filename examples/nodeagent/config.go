package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"path"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/agent"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
)

// config is what the command line says.
type config struct {
	Kubeconfig string     // kubeconfig file of the API server
	Node       string     // this node's name: the VMIs labelled kubevirt.io/nodeName=Node are ours
	Emulate    bool       // run guests under emulation (domain type qemu)
	Claim      bool       // also bind unbound VMIs whose nodeSelector matches NodeLabels
	NodeLabels labels.Set // this node's labels, for -claim

	// Scheduling are the KubeVirt feature gates that change what -claim
	// requires of this node for a VMI (-feature-gates).
	Scheduling nodeapi.Scheduling
	StateDir   string // one state folder per VMI below it (absolute)

	// VolumeClaims maps a namespace's persistentVolumeClaim (or dataVolume)
	// names to the host disks behind them: namespace → claim → disk.
	VolumeClaims map[string]map[string]convert.DiskSource

	MetricsAddress string   // where /metrics, /healthz, /readyz and /consoles are served
	StreamAddress  string   // IP of each running VMI's console and VNC ports; empty: none
	StreamOrigins  []string // web origins whose pages may open the VNC WebSocket ports

	APIAddress string // host:port of the node API for the control plane (mutual TLS); empty: none
	APICerts   string // folder of the node API's certificates (tls.crt, tls.key, ca.crt)

	MigrationBandwidth uint64 // bytes per second of each migration's stream from this node; 0: unlimited

	HeartbeatInterval time.Duration // the longest time between two heartbeats on the Node
	LibvirtURI        string        // the libvirt connection; empty: the launcher's default
}

// parseFlags reads the command line (without the program name). Errors name
// the flag; -h prints the usage to stderr and returns flag.ErrHelp.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("nodeagent", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "kubeconfig `FILE` of the API server (required)")
	fs.StringVar(&cfg.Node, "node", "", "this node's `NAME`: the agent runs the VMIs labelled kubevirt.io/nodeName=NAME (required)")
	fs.BoolVar(&cfg.Emulate, "emulate", false, "run guests under emulation (domain type qemu) even where KVM is available")
	fs.BoolVar(&cfg.Claim, "claim", false, "also bind unbound VMIs whose spec.nodeSelector matches -node-labels")
	fs.Func("node-labels", "this node's labels, `k=v,...`, matched against a VMI's spec.nodeSelector with -claim", func(s string) error {
		set, err := labels.ConvertSelectorToLabelsMap(s)
		if err != nil {
			return err
		}
		cfg.NodeLabels = set
		return nil
	})
	fs.Func("feature-gates", "KubeVirt feature gates that change what -claim requires of this node, `NAME,...`: HypervStrictCheck (each Hyper-V enlightenment needs its hyperv.node.kubevirt.io label)", func(s string) error {
		sched, err := nodeapi.ParseFeatureGates(s)
		cfg.Scheduling = sched
		return err
	})
	fs.StringVar(&cfg.StateDir, "state-dir", convert.DefaultStateDir, "`DIR` holding one state folder per VMI")
	fs.Func("volume-claims", "the host disks behind claims, `NAMESPACE/CLAIM=PATH,...`: a VMI's persistentVolumeClaim or dataVolume CLAIM in NAMESPACE is the raw file or block device (under /dev/) PATH, absolute", func(s string) error {
		claims, err := parseVolumeClaims(s)
		cfg.VolumeClaims = claims
		return err
	})
	fs.StringVar(&cfg.MetricsAddress, "metrics-address", agent.DefaultHTTPAddress,
		"`ADDR` serving /metrics, /healthz, /readyz and /consoles (port 0: any free port, logged; off: none)")
	fs.StringVar(&cfg.StreamAddress, "stream-address", "",
		"`IP` on which each running VMI gets a serial console, a VNC and a VNC WebSocket port, listed at /consoles (keep it loopback: 127.0.0.1; empty: no ports)")
	fs.Func("stream-origins", "web origins, `host:port,...` (path.Match patterns), whose pages may open the VNC WebSocket ports, such as localhost:6080 for noVNC served there", func(s string) error {
		for _, o := range strings.Split(s, ",") {
			if _, err := path.Match(o, ""); err != nil || o == "" {
				return fmt.Errorf("%q is not a host pattern (such as localhost:6080)", o)
			}
			cfg.StreamOrigins = append(cfg.StreamOrigins, o)
		}
		return nil
	})
	fs.StringVar(&cfg.APIAddress, "api-address", "",
		"`HOST:PORT` serving the node API to the control plane (virtctl console, vnc, pause...), mutual TLS; written to this node's Node object (port 0: any free port; empty: none)")
	fs.StringVar(&cfg.APICerts, "api-certs", "",
		"`DIR` of the node API's certificates: tls.crt and tls.key (this agent's), ca.crt (the control plane's authority); required with -api-address")
	fs.DurationVar(&cfg.HeartbeatInterval, "heartbeat-interval", agent.DefaultHeartbeatInterval,
		"the longest `DURATION` between two heartbeats written to this node's Node (kubevirt.io/heartbeat; changes are written at once)")
	fs.Func("migration-bandwidth", "cap each live migration from this node at `QUANTITY` bytes per second, such as 64Mi (KubeVirt's bandwidthPerMigration; libvirt rounds up to whole MiB/s); default unlimited", func(s string) error {
		q, err := resource.ParseQuantity(s)
		if err != nil || q.Sign() < 0 {
			return fmt.Errorf("%q is not a quantity of bytes such as 64Mi", s)
		}
		cfg.MigrationBandwidth = uint64(q.Value())
		return nil
	})
	fs.StringVar(&cfg.LibvirtURI, "libvirt-uri", "", "the libvirt connection `URI` (default "+launcher.DefaultURI+")")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: nodeagent -kubeconfig FILE -node NAME [-emulate] [-claim] [-node-labels k=v,...] [-feature-gates NAME,...] [-state-dir DIR] [-volume-claims NAMESPACE/CLAIM=PATH,...] [-metrics-address ADDR] [-stream-address IP] [-stream-origins HOST:PORT,...] [-api-address HOST:PORT -api-certs DIR] [-heartbeat-interval DURATION] [-libvirt-uri URI] [-migration-bandwidth QUANTITY]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.Kubeconfig == "" {
		return config{}, errors.New("-kubeconfig: required")
	}
	if cfg.Node == "" {
		return config{}, errors.New("-node: required")
	}
	// The node's name is a label value on each VMI it runs, and a node
	// object's name: it must be both.
	if errs := append(validation.IsDNS1123Subdomain(cfg.Node), validation.IsValidLabelValue(cfg.Node)...); len(errs) > 0 {
		return config{}, fmt.Errorf("-node: invalid value %q: %s", cfg.Node, errs[0])
	}
	if cfg.StreamAddress != "" && net.ParseIP(cfg.StreamAddress) == nil {
		return config{}, fmt.Errorf("-stream-address: invalid value %q: not an IP address (such as 127.0.0.1)", cfg.StreamAddress)
	}
	if len(cfg.StreamOrigins) > 0 && cfg.StreamAddress == "" {
		return config{}, errors.New("-stream-origins: needs -stream-address (without it there are no WebSocket ports)")
	}
	if (cfg.APIAddress == "") != (cfg.APICerts == "") {
		return config{}, errors.New("-api-address and -api-certs: give both or neither (the node API is mutual TLS only)")
	}
	if cfg.HeartbeatInterval <= 0 {
		return config{}, fmt.Errorf("-heartbeat-interval: invalid value %s: must be positive", cfg.HeartbeatInterval)
	}
	if cfg.StateDir == "" {
		return config{}, errors.New("-state-dir: must not be empty")
	}
	// QEMU and libvirt need absolute paths; the agent's working folder is
	// nobody else's.
	abs, err := filepath.Abs(cfg.StateDir)
	if err != nil {
		return config{}, fmt.Errorf("-state-dir: %w", err)
	}
	cfg.StateDir = abs
	return cfg, nil
}

// parseVolumeClaims reads -volume-claims: NAMESPACE/CLAIM=PATH entries,
// comma-separated, each claim once, each path absolute (a block device when
// under /dev/, else a raw file).
func parseVolumeClaims(s string) (map[string]map[string]convert.DiskSource, error) {
	claims := map[string]map[string]convert.DiskSource{}
	for _, entry := range strings.Split(s, ",") {
		key, file, ok := strings.Cut(entry, "=")
		ns, name, slash := strings.Cut(key, "/")
		switch {
		case !ok || !slash:
			return nil, fmt.Errorf("%q is not NAMESPACE/CLAIM=PATH", entry)
		case len(validation.IsDNS1123Label(ns)) > 0:
			return nil, fmt.Errorf("%q: %q is not a namespace name", entry, ns)
		case len(validation.IsDNS1123Subdomain(name)) > 0:
			return nil, fmt.Errorf("%q: %q is not a claim name", entry, name)
		case !filepath.IsAbs(file) || filepath.Clean(file) != file:
			return nil, fmt.Errorf("%q: the path %q is not absolute and clean", entry, file)
		case claims[ns][name].Path != "":
			return nil, fmt.Errorf("%q: the claim %s/%s is mapped twice", entry, ns, name)
		}
		disk := convert.DiskSource{Type: "file", Path: file, Format: "raw"}
		if strings.HasPrefix(file, "/dev/") {
			disk.Type = "block"
		}
		if claims[ns] == nil {
			claims[ns] = map[string]convert.DiskSource{}
		}
		claims[ns][name] = disk
	}
	return claims, nil
}
