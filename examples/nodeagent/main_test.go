package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/testcluster"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
)

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		if doc := os.Getenv(hostFactsEnv); doc != "" {
			testHostFacts = new(convert.HostFacts)
			if err := json.Unmarshal([]byte(doc), testHostFacts); err != nil {
				fmt.Fprintf(os.Stderr, "%s: %v\n", hostFactsEnv, err)
				os.Exit(2)
			}
		}
		os.Args = append([]string{"nodeagent"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestParseFlags(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want config
		err  string
	}{
		{
			name: "all",
			args: []string{"-kubeconfig", "/k", "-node", "node-a", "-emulate", "-claim", "-node-labels", "zone=a,kubevirt.io/schedulable=true",
				"-feature-gates", "HypervStrictCheck", "-state-dir", "/s", "-metrics-address", "127.0.0.1:0", "-stream-address", "127.0.0.1", "-stream-origins", "localhost:6080,*.example:443",
				"-api-address", "127.0.0.1:0", "-api-certs", "/pki/nodeagent", "-heartbeat-interval", "5s", "-libvirt-uri", "qemu+unix:///system?socket=/s/sock", "-migration-bandwidth", "8Mi"},
			want: config{Kubeconfig: "/k", Node: "node-a", Emulate: true, Claim: true,
				NodeLabels: labels.Set{"zone": "a", "kubevirt.io/schedulable": "true"}, Scheduling: nodeapi.Scheduling{HypervStrictCheck: true}, StateDir: "/s", MetricsAddress: "127.0.0.1:0",
				StreamAddress: "127.0.0.1", StreamOrigins: []string{"localhost:6080", "*.example:443"},
				APIAddress: "127.0.0.1:0", APICerts: "/pki/nodeagent", HeartbeatInterval: 5 * time.Second, LibvirtURI: "qemu+unix:///system?socket=/s/sock", MigrationBandwidth: 8 << 20},
		},
		{
			name: "defaults",
			args: []string{"-kubeconfig", "/k", "-node", "node-a"},
			want: config{Kubeconfig: "/k", Node: "node-a", StateDir: "/var/lib/vmi2libvirt/vmis", MetricsAddress: "127.0.0.1:8080", HeartbeatInterval: time.Minute},
		},
		{
			name: "relative state dir",
			args: []string{"-kubeconfig", "/k", "-node", "node-a", "-state-dir", "vmis", "-metrics-address", "off"},
			want: config{Kubeconfig: "/k", Node: "node-a", StateDir: wd + "/vmis", MetricsAddress: "off", HeartbeatInterval: time.Minute},
		},
		{
			name: "volume claims",
			args: []string{"-kubeconfig", "/k", "-node", "node-a", "-volume-claims", "team-a/data=/srv/a/data.img,team-b/data=/dev/vg0/data,team-a/logs=/srv/a/logs.img"},
			want: config{Kubeconfig: "/k", Node: "node-a", StateDir: "/var/lib/vmi2libvirt/vmis", MetricsAddress: "127.0.0.1:8080", HeartbeatInterval: time.Minute,
				VolumeClaims: map[string]map[string]convert.DiskSource{
					"team-a": {"data": {Type: "file", Path: "/srv/a/data.img", Format: "raw"}, "logs": {Type: "file", Path: "/srv/a/logs.img", Format: "raw"}},
					"team-b": {"data": {Type: "block", Path: "/dev/vg0/data", Format: "raw"}},
				}},
		},
		{name: "volume claim without a namespace", args: []string{"-kubeconfig", "/k", "-node", "a", "-volume-claims", "data=/srv/data.img"},
			err: `invalid value "data=/srv/data.img" for flag -volume-claims: "data=/srv/data.img" is not NAMESPACE/CLAIM=PATH`},
		{name: "volume claim's namespace not a name", args: []string{"-kubeconfig", "/k", "-node", "a", "-volume-claims", "Team/data=/srv/data.img"},
			err: `invalid value "Team/data=/srv/data.img" for flag -volume-claims: "Team/data=/srv/data.img": "Team" is not a namespace name`},
		{name: "volume claim not a name", args: []string{"-kubeconfig", "/k", "-node", "a", "-volume-claims", "team/Data_1=/srv/data.img"},
			err: `invalid value "team/Data_1=/srv/data.img" for flag -volume-claims: "team/Data_1=/srv/data.img": "Data_1" is not a claim name`},
		{name: "volume claim's path relative", args: []string{"-kubeconfig", "/k", "-node", "a", "-volume-claims", "team/data=data.img"},
			err: `invalid value "team/data=data.img" for flag -volume-claims: "team/data=data.img": the path "data.img" is not absolute and clean`},
		{name: "volume claim's path not clean", args: []string{"-kubeconfig", "/k", "-node", "a", "-volume-claims", "team/data=/srv/../etc/shadow"},
			err: `invalid value "team/data=/srv/../etc/shadow" for flag -volume-claims: "team/data=/srv/../etc/shadow": the path "/srv/../etc/shadow" is not absolute and clean`},
		{name: "volume claim twice", args: []string{"-kubeconfig", "/k", "-node", "a", "-volume-claims", "team/data=/srv/a.img,team/data=/srv/b.img"},
			err: `invalid value "team/data=/srv/a.img,team/data=/srv/b.img" for flag -volume-claims: "team/data=/srv/b.img": the claim team/data is mapped twice`},
		{name: "feature gate that changes no scheduling", args: []string{"-kubeconfig", "/k", "-node", "a", "-feature-gates", "HypervStrictCheck,LiveMigration"},
			err: `invalid value "HypervStrictCheck,LiveMigration" for flag -feature-gates: "LiveMigration" is not a feature gate that changes scheduling (known: HypervStrictCheck)`},
		{name: "feature gates, an empty one", args: []string{"-kubeconfig", "/k", "-node", "a", "-feature-gates", "HypervStrictCheck,"},
			err: `invalid value "HypervStrictCheck," for flag -feature-gates: "" is not a feature gate that changes scheduling (known: HypervStrictCheck)`},
		{name: "no kubeconfig", args: []string{"-node", "a"}, err: "-kubeconfig: required"},
		{name: "no node", args: []string{"-kubeconfig", "/k"}, err: "-node: required"},
		{name: "node not a name", args: []string{"-kubeconfig", "/k", "-node", "Node_A"},
			err: `-node: invalid value "Node_A": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{name: "node too long for a label", args: []string{"-kubeconfig", "/k", "-node", strings.Repeat("a", 64)},
			err: `-node: invalid value "` + strings.Repeat("a", 64) + `": must be no more than 63 characters`},
		{name: "bad node label", args: []string{"-kubeconfig", "/k", "-node", "a", "-node-labels", "zone"},
			err: `invalid value "zone" for flag -node-labels: invalid selector: [zone]`},
		{name: "stream address with a port", args: []string{"-kubeconfig", "/k", "-node", "a", "-stream-address", "127.0.0.1:5900"},
			err: `-stream-address: invalid value "127.0.0.1:5900": not an IP address (such as 127.0.0.1)`},
		{name: "stream address a host name", args: []string{"-kubeconfig", "/k", "-node", "a", "-stream-address", "localhost"},
			err: `-stream-address: invalid value "localhost": not an IP address (such as 127.0.0.1)`},
		{name: "stream origin not a pattern", args: []string{"-kubeconfig", "/k", "-node", "a", "-stream-address", "127.0.0.1", "-stream-origins", "localhost:6080,[x"},
			err: `invalid value "localhost:6080,[x" for flag -stream-origins: "[x" is not a host pattern (such as localhost:6080)`},
		{name: "stream origins without ports", args: []string{"-kubeconfig", "/k", "-node", "a", "-stream-origins", "localhost:6080"},
			err: "-stream-origins: needs -stream-address (without it there are no WebSocket ports)"},
		{name: "api address without certificates", args: []string{"-kubeconfig", "/k", "-node", "a", "-api-address", "127.0.0.1:8186"},
			err: "-api-address and -api-certs: give both or neither (the node API is mutual TLS only)"},
		{name: "api certificates without address", args: []string{"-kubeconfig", "/k", "-node", "a", "-api-certs", "/pki"},
			err: "-api-address and -api-certs: give both or neither (the node API is mutual TLS only)"},
		{name: "heartbeat interval zero", args: []string{"-kubeconfig", "/k", "-node", "a", "-heartbeat-interval", "0s"},
			err: "-heartbeat-interval: invalid value 0s: must be positive"},
		{name: "migration bandwidth not a quantity", args: []string{"-kubeconfig", "/k", "-node", "a", "-migration-bandwidth", "fast"},
			err: `invalid value "fast" for flag -migration-bandwidth: "fast" is not a quantity of bytes such as 64Mi`},
		{name: "empty state dir", args: []string{"-kubeconfig", "/k", "-node", "a", "-state-dir", ""}, err: "-state-dir: must not be empty"},
		{name: "argument", args: []string{"-kubeconfig", "/k", "-node", "a", "vmi.yaml"}, err: `unexpected argument "vmi.yaml"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := parseFlags(c.args, io.Discard)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := parseFlags([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
}

// TestRefusesWithoutCRD: where the API server does not serve KubeVirt's
// CRD, the agent exits 1 at once with the remedy, before it touches
// libvirt.
func TestRefusesWithoutCRD(t *testing.T) {
	c := testcluster.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, stderr, err := c.Kubectl(ctx, "delete", "crd", "virtualmachineinstances.kubevirt.io"); err != nil {
		t.Fatalf("kubectl delete crd: %v\n%s", err, stderr)
	}
	a := startAgent(t, "-kubeconfig", c.Kubeconfig, "-node", "node-a", "-metrics-address", "off")
	err := a.wait(ctx)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("agent without the CRD: %v, want exit status 1\n%s", err, a.output())
	}
	want := "does not serve kubevirt.io/v1 VirtualMachineInstances: install KubeVirt's CRD (bash .ci/cluster.sh up does)"
	if !strings.Contains(a.output(), want) {
		t.Errorf("agent output lacks %q:\n%s", want, a.output())
	}
	if strings.Contains(a.output(), "connected to libvirt") {
		t.Errorf("the agent connected to libvirt before checking the CRD:\n%s", a.output())
	}
}

// FuzzParseFlags: whatever the command line, parseFlags returns a config
// or an error, never panics, and a config it returns is one the agent can
// use: a node name that is a DNS subdomain and a label value, node labels
// that are valid labels, an absolute state folder, volume claims of valid
// namespaces at absolute, clean paths.
func FuzzParseFlags(f *testing.F) {
	f.Add("node-a", "zone=a,kubevirt.io/schedulable=true", "/s", "127.0.0.1:0", "127.0.0.1", "team/data=/srv/data.img,team/b=/dev/sdb", "HypervStrictCheck")
	f.Add("Node_A", "zone", "", "off", "::1", "data=/srv/data.img", "hypervstrictcheck")
	f.Add("a", "a=b=c,,=", "rel/dir", "", "127.0.0.1:0", "t/a=/x,t/a=/y,/=,", "HypervStrictCheck,,")
	f.Fuzz(func(t *testing.T, node, nodeLabels, stateDir, metrics, streams, claims, gates string) {
		cfg, err := parseFlags([]string{"-kubeconfig", "/k", "-node", node, "-node-labels", nodeLabels,
			"-state-dir", stateDir, "-metrics-address", metrics, "-stream-address", streams, "-volume-claims", claims,
			"-feature-gates", gates}, io.Discard)
		if err != nil {
			return
		}
		for _, g := range strings.Split(gates, ",") {
			if gates != "" && g != "HypervStrictCheck" {
				t.Errorf("accepted feature gates %q", gates)
			}
		}
		if cfg.Scheduling.HypervStrictCheck != (gates != "") {
			t.Errorf("feature gates %q: HypervStrictCheck %v", gates, cfg.Scheduling.HypervStrictCheck)
		}
		if errs := append(validation.IsDNS1123Subdomain(cfg.Node), validation.IsValidLabelValue(cfg.Node)...); len(errs) > 0 {
			t.Errorf("accepted node %q: %v", cfg.Node, errs)
		}
		if _, err := labels.ValidatedSelectorFromSet(cfg.NodeLabels); err != nil {
			t.Errorf("accepted node labels %v: %v", cfg.NodeLabels, err)
		}
		if !filepath.IsAbs(cfg.StateDir) {
			t.Errorf("accepted state folder %q, not absolute", cfg.StateDir)
		}
		if cfg.StreamAddress != "" && net.ParseIP(cfg.StreamAddress) == nil {
			t.Errorf("accepted stream address %q, not an IP address", cfg.StreamAddress)
		}
		for ns, byName := range cfg.VolumeClaims {
			for name, disk := range byName {
				if len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 || !filepath.IsAbs(disk.Path) || filepath.Clean(disk.Path) != disk.Path {
					t.Errorf("accepted volume claim %s/%s=%s", ns, name, disk.Path)
				}
			}
		}
	})
}
