package main

import (
	"errors"
	"flag"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
)

func TestParseFlags(t *testing.T) {
	required := []string{"-kubeconfig", "/k", "-tls-cert-file", "/c", "-tls-private-key-file", "/p"}
	cases := []struct {
		name string
		args []string
		want config
		err  string
	}{
		{
			name: "defaults",
			args: required,
			want: config{Kubeconfig: "/k", CertFile: "/c", KeyFile: "/p", BindAddress: "127.0.0.1:8443", MetricsAddress: "127.0.0.1:8081", NodeGrace: 5 * time.Minute},
		},
		{
			name: "all",
			args: append(required, "-bind-address", "127.0.0.1:0", "-metrics-address", "off", "-node-grace-period", "20s", "-feature-gates", "HypervStrictCheck"),
			want: config{Kubeconfig: "/k", CertFile: "/c", KeyFile: "/p", BindAddress: "127.0.0.1:0", MetricsAddress: "off", NodeGrace: 20 * time.Second,
				Scheduling: nodeapi.Scheduling{HypervStrictCheck: true}},
		},
		{name: "unknown feature gate", args: append(required, "-feature-gates", "HyperVStrictCheck"),
			err: `invalid value "HyperVStrictCheck" for flag -feature-gates: "HyperVStrictCheck" is not a feature gate that changes scheduling (known: HypervStrictCheck)`},
		{name: "grace period zero", args: append(required, "-node-grace-period", "0s"), err: "-node-grace-period: invalid value 0s: must be positive"},
		{name: "no kubeconfig", args: required[2:], err: "-kubeconfig: required"},
		{name: "no certificate", args: append(required[:2:2], required[4:]...), err: "-tls-cert-file: required"},
		{name: "no key", args: required[:4], err: "-tls-private-key-file: required"},
		{name: "bind address without port", args: append(required, "-bind-address", "127.0.0.1"),
			err: `-bind-address: invalid value "127.0.0.1": address 127.0.0.1: missing port in address`},
		{name: "metrics address without port", args: append(required, "-metrics-address", "localhost"),
			err: `-metrics-address: invalid value "localhost": address localhost: missing port in address`},
		{name: "argument", args: append(required, "vm.yaml"), err: `unexpected argument "vm.yaml"`},
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
