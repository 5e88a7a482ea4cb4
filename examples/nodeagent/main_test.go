package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/testcluster"
)

// runMainEnv makes the test binary run main() instead of the tests, so a
// test runs the agent as the separate process a person starts.
const runMainEnv = "NODEAGENT_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		os.Args = append([]string{"nodeagent"}, os.Args[1:]...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestParseFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want config
		err  string
	}{
		{
			name: "all",
			args: []string{"-kubeconfig", "/k", "-node", "node-a", "-emulate", "-claim", "-node-labels", "zone=a,kubevirt.io/schedulable=true", "-state-dir", "/s"},
			want: config{Kubeconfig: "/k", Node: "node-a", Emulate: true, Claim: true,
				NodeLabels: labels.Set{"zone": "a", "kubevirt.io/schedulable": "true"}, StateDir: "/s"},
		},
		{
			name: "defaults",
			args: []string{"-kubeconfig", "/k", "-node", "node-a"},
			want: config{Kubeconfig: "/k", Node: "node-a", StateDir: "/var/lib/vmi2libvirt/vmis"},
		},
		{name: "no kubeconfig", args: []string{"-node", "a"}, err: "-kubeconfig: required"},
		{name: "no node", args: []string{"-kubeconfig", "/k"}, err: "-node: required"},
		{name: "node not a name", args: []string{"-kubeconfig", "/k", "-node", "Node_A"},
			err: `-node: invalid value "Node_A": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{name: "node too long for a label", args: []string{"-kubeconfig", "/k", "-node", strings.Repeat("a", 64)},
			err: `-node: invalid value "` + strings.Repeat("a", 64) + `": must be no more than 63 characters`},
		{name: "bad node label", args: []string{"-kubeconfig", "/k", "-node", "a", "-node-labels", "zone"},
			err: `invalid value "zone" for flag -node-labels: invalid selector: [zone]`},
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

// TestAgentOnAPIServer runs the agent as a process against a real API
// server: it watches exactly its node's VMIs, exits 0 on SIGTERM, and
// refuses to start (exit 1, with the remedy) where the CRD is not served.
func TestAgentOnAPIServer(t *testing.T) {
	c := testcluster.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	cl, err := client.New(c.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	// Two VMIs on node-a, one on node-b, one unbound.
	for name, node := range map[string]string{"a1": "node-a", "a2": "node-a", "b1": "node-b", "free": ""} {
		vmi := &virtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: corev1.NamespaceDefault}}
		if node != "" {
			vmi.Labels = map[string]string{virtv1.NodeNameLabel: node}
		}
		if err := cl.Create(ctx, vmi); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("WatchesItsNodeAndStopsOnSIGTERM", func(t *testing.T) {
		agent := startAgent(t, "-kubeconfig", c.Kubeconfig, "-node", "node-a", "-state-dir", t.TempDir())
		line := agent.waitFor(ctx, t, "nodeagent: watching VMIs")
		for _, want := range []string{"node=node-a", `selector="kubevirt.io/nodeName=node-a"`, "vmis=2"} {
			if !strings.Contains(line, want) {
				t.Errorf("log line %q lacks %q", line, want)
			}
		}
		if err := agent.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := agent.wait(ctx); err != nil {
			t.Fatalf("agent after SIGTERM: %v (want exit 0)\n%s", err, agent.output())
		}
		if !strings.Contains(agent.output(), "nodeagent: stopped") {
			t.Errorf("agent output lacks its stop line:\n%s", agent.output())
		}
	})

	t.Run("RefusesWithoutCRD", func(t *testing.T) {
		if _, stderr, err := c.Kubectl(ctx, "delete", "crd", "virtualmachineinstances.kubevirt.io"); err != nil {
			t.Fatalf("kubectl delete crd: %v\n%s", err, stderr)
		}
		agent := startAgent(t, "-kubeconfig", c.Kubeconfig, "-node", "node-a")
		err := agent.wait(ctx)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("agent without the CRD: %v, want exit status 1\n%s", err, agent.output())
		}
		want := "does not serve kubevirt.io/v1 VirtualMachineInstances: install KubeVirt's CRD (bash .ci/cluster.sh up does)"
		if !strings.Contains(agent.output(), want) {
			t.Errorf("agent output lacks %q:\n%s", want, agent.output())
		}
	})
}

// agent is the node agent running as a child process (the test binary
// running main), with its stderr collected line by line.
type agent struct {
	cmd *exec.Cmd

	mu      sync.Mutex
	lines   []string
	changed chan struct{} // a line arrived (capacity 1)

	exited  chan struct{} // closed when the process has exited
	exitErr error         // cmd.Wait's answer, once exited is closed
}

func startAgent(t *testing.T, args ...string) *agent {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	a := &agent{cmd: cmd, changed: make(chan struct{}, 1), exited: make(chan struct{})}
	go func() {
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			a.mu.Lock()
			a.lines = append(a.lines, s.Text())
			a.mu.Unlock()
			select {
			case a.changed <- struct{}{}:
			default:
			}
		}
		a.exitErr = cmd.Wait() // after the last read, as exec requires
		close(a.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-a.exited:
		default:
			cmd.Process.Kill()
			<-a.exited
		}
	})
	return a
}

// waitFor returns the first line of the agent's stderr that holds text.
func (a *agent) waitFor(ctx context.Context, t *testing.T, text string) string {
	t.Helper()
	next := 0
	for {
		a.mu.Lock()
		lines := a.lines[next:]
		next = len(a.lines)
		a.mu.Unlock()
		for _, line := range lines {
			if strings.Contains(line, text) {
				return line
			}
		}
		select {
		case <-a.changed:
		case <-a.exited:
			if a.mu.Lock(); next == len(a.lines) {
				a.mu.Unlock()
				t.Fatalf("agent exited (%v) before logging %q:\n%s", a.exitErr, text, a.output())
			}
			a.mu.Unlock()
		case <-ctx.Done():
			t.Fatalf("agent did not log %q: %v\n%s", text, ctx.Err(), a.output())
		}
	}
}

// wait waits for the agent to exit and returns cmd.Wait's error.
func (a *agent) wait(ctx context.Context) error {
	select {
	case <-a.exited:
		return a.exitErr
	case <-ctx.Done():
		return fmt.Errorf("agent still running: %w", ctx.Err())
	}
}

// output is everything the agent printed on stderr so far.
func (a *agent) output() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.lines, "\n")
}
