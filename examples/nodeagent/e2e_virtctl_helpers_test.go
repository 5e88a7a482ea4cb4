package main

// Helpers of the end-to-end tests with KubeVirt's real virtctl: a test
// cluster with the aggregation layer, the subresource API server
// (package subresources, run in the test's process as the control plane
// runs it) registered as the APIService v1.subresources.kubevirt.io, a
// node agent serving the node API, and virtctl run as a person runs it.

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	virtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/testcluster"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/subresources"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/streamtest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// The Service the API server reaches the subresource API through; the
// server's certificate names it.
const (
	subresourcesNamespace = "vmi2libvirt"
	subresourcesService   = "subresources"
)

// virtctlWorld is a world with the subresource API and one node agent
// serving the node API.
type virtctlWorld struct {
	*world
	virtctl string // the binary
	pki     string // the certificate folders (nodeagent, controlplane, subresources)
	node    string
	dir     string // the agent's state folder
	agent   *agentProcess
	server  *subresources.Server
	log     *syncBuffer // the subresource server's log
}

// newVirtctlWorld starts it all; the server and the agent stop at the end
// of the test.
func newVirtctlWorld(t testing.TB) *virtctlWorld {
	t.Helper()
	return startVirtctlWorld(t, nil)
}

// newVirtctlVMWorld is a virtctl world with the control plane too (its VM
// controller and webhooks, the process of testcluster.StartControlPlane),
// whose agent claims the VMIs that select its node (vmWorld.guestVM's):
// virtctl start, restart and stop act on VirtualMachines as on a KubeVirt
// cluster. The vmWorld of the same cluster, control plane and agent gives
// the VM tests' helpers.
func newVirtctlVMWorld(t testing.TB) (*virtctlWorld, *vmWorld) {
	t.Helper()
	return newVirtctlVMWorldWith(t)
}

// newVirtctlVMWorldWith is newVirtctlVMWorld with extra flags of the
// agent.
func newVirtctlVMWorldWith(t testing.TB, extra ...string) (*virtctlWorld, *vmWorld) {
	t.Helper()
	var vw *vmWorld
	w := startVirtctlWorld(t, func(w *virtctlWorld) []string {
		vw = &vmWorld{world: w.world, cp: w.cluster.StartControlPlane(t), node: w.node, dir: w.dir}
		return append([]string{"-claim"}, extra...)
	})
	vw.agent = w.agent
	return w, vw
}

// startVirtctlWorld starts the world; before starting the agent it calls
// before (when not nil), whose answer are extra flags of the agent.
func startVirtctlWorld(t testing.TB, before func(*virtctlWorld) []string) *virtctlWorld {
	t.Helper()
	w := &virtctlWorld{world: newWorld(t), node: uniqueName("node"), dir: stateDir(t)}
	w.startSubresources(t)
	args := []string{"-api-address", "127.0.0.1:0", "-api-certs", w.certs("nodeagent")}
	if before != nil {
		args = append(args, before(w)...)
	}
	w.agent = w.startNode(t, w.node, w.dir, args...)
	waitCtx, waitCancel := context.WithTimeout(context.Background(), time.Minute)
	defer waitCancel()
	w.agent.waitFor(waitCtx, t, "node API address written to the Node")
	return w
}

// startSubresources finds virtctl and starts the subresource API in the
// test's process, registered as its APIService with KubeVirt's default
// role, with the certificates of the node agents' API beside it (in
// w.pki: nodeagent's to serve it, controlplane's to call it); the server
// stops at the end of the test.
func (w *virtctlWorld) startSubresources(t testing.TB) {
	t.Helper()
	w.virtctl, w.pki, w.log = testcluster.Virtctl(t), t.TempDir(), &syncBuffer{}
	nodes, err := testcluster.NewCA("vmi2libvirt-nodes-ca")
	if err != nil {
		t.Fatal(err)
	}
	serving, err := testcluster.NewCA("vmi2libvirt-subresources-ca")
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range []error{
		nodes.Issue(w.certs("nodeagent"), nodeapi.ServerName, x509.ExtKeyUsageServerAuth, nodeapi.ServerName),
		nodes.Issue(w.certs("controlplane"), nodeapi.ClientName, x509.ExtKeyUsageClientAuth),
		serving.Issue(w.certs("subresources"), subresourcesService, x509.ExtKeyUsageServerAuth,
			subresourcesService+"."+subresourcesNamespace+".svc"),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}

	// k8s.io/apiserver's controllers log through klog: into the server's
	// log, not the test's output.
	klog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(w.log, nil)))
	ctx, cancel := context.WithCancel(context.Background())
	srv, err := subresources.New(ctx, w.cluster.Config, subresources.Config{
		Address: "127.0.0.1:0", CertDir: w.certs("subresources"), NodeAgentCertDir: w.certs("controlplane"),
		Logger: slog.New(slog.NewTextHandler(w.log, nil)),
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	w.server = srv
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("subresources.Run: %v", err)
		}
		if t.Failed() {
			t.Logf("subresource server's log:\n%s", w.log.String())
		}
	})
	regCtx, regCancel := context.WithTimeout(ctx, 3*time.Minute)
	defer regCancel()
	err = w.cluster.RegisterAPIService(regCtx, testcluster.APIService{
		Group: subresources.Group, Versions: subresources.Versions,
		Namespace: subresourcesNamespace, Service: subresourcesService,
		Port: srv.Addr().(*net.TCPAddr).Port, CABundle: serving.PEM,
	})
	if err != nil {
		t.Fatalf("%v\nsubresource server's log:\n%s", err, w.log.String())
	}

	// KubeVirt's default role: every user may read the version.
	if _, stderr, err := w.cluster.Kubectl(regCtx, "apply", "-f", filepath.Join("subresources", "default-rbac.yaml")); err != nil {
		t.Fatalf("kubectl apply KubeVirt's default role: %v\n%s", err, stderr)
	}
}

// certs is the certificate folder of one party.
func (w *virtctlWorld) certs(who string) string { return filepath.Join(w.pki, who) }

// run runs virtctl with the kubeconfig (empty: the administrator's) and
// args to its end, and returns what it printed.
func (w *virtctlWorld) run(t testing.TB, kubeconfig string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := w.command(ctx, kubeconfig, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// mustRun runs virtctl as the administrator and fails the test unless it
// exits 0.
func (w *virtctlWorld) mustRun(t testing.TB, args ...string) string {
	t.Helper()
	stdout, stderr, err := w.run(t, "", args...)
	if err != nil {
		t.Fatalf("virtctl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout, stderr)
	}
	return stdout
}

// command is virtctl with the kubeconfig and args, not started.
func (w *virtctlWorld) command(ctx context.Context, kubeconfig string, args ...string) *exec.Cmd {
	if kubeconfig == "" {
		kubeconfig = w.cluster.Kubeconfig
	}
	cmd := exec.CommandContext(ctx, w.virtctl, append([]string{"--kubeconfig", kubeconfig}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+filepath.Dir(kubeconfig))
	return cmd
}

// virtctlConsole is `virtctl console` running, its standard input a pipe
// (what is typed) and its output transcripts.
type virtctlConsole struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *streamtest.Transcript
	errOut *streamtest.Transcript
	done   chan struct{}
	err    error // cmd.Wait's, once done is closed
}

// console starts `virtctl console` of the VMI ns/name with kubeconfig;
// it is killed at the end of the test if still running.
func (w *virtctlWorld) console(t testing.TB, kubeconfig, ns, name string) *virtctlConsole {
	t.Helper()
	cmd := w.command(context.Background(), kubeconfig, "-n", ns, "console", "--timeout", "3", name)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &virtctlConsole{cmd: cmd, in: in, out: streamtest.ReadAll(stdout), errOut: streamtest.ReadAll(stderr), done: make(chan struct{})}
	go func() {
		_ = c.out.End(t, time.Hour)
		_ = c.errOut.End(t, time.Hour)
		c.err = cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			_ = cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// connected waits until virtctl says it is connected.
func (c *virtctlConsole) connected(t testing.TB, timeout time.Duration) {
	t.Helper()
	c.errOut.WaitFor(t, "Successfully connected to ", 0, timeout)
}

// ask types line on the console and returns the first match of the
// regular expression answer (its first group) that the guest prints
// after it.
func (c *virtctlConsole) ask(t testing.TB, line string, answer *regexp.Regexp, timeout time.Duration) string {
	t.Helper()
	from := len(c.out.String())
	streamtest.TypeLine(t, c.in, line)
	deadline := time.Now().Add(timeout)
	for {
		if m := answer.FindStringSubmatch(c.out.String()[from:]); m != nil {
			return m[len(m)-1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("console: no answer %s to %q within %s; it holds:\n%s", answer, line, timeout, c.out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leave types Ctrl-] and waits until virtctl exits; it must exit 0.
func (c *virtctlConsole) leave(t testing.TB) {
	t.Helper()
	if _, err := c.in.Write([]byte{0x1d}); err != nil {
		t.Fatalf("type Ctrl-]: %v", err)
	}
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("virtctl console still runs 30 s after Ctrl-]\nstderr:\n%s", c.errOut.String())
	}
	if c.err != nil {
		t.Fatalf("virtctl console after Ctrl-]: %v, want exit 0\nstderr:\n%s", c.err, c.errOut.String())
	}
}

// wait waits until virtctl exits and returns cmd.Wait's error.
func (c *virtctlConsole) wait(t testing.TB, timeout time.Duration) error {
	t.Helper()
	select {
	case <-c.done:
		return c.err
	case <-time.After(timeout):
		t.Fatalf("virtctl console still runs after %s\nstderr:\n%s", timeout, c.errOut.String())
		return nil
	}
}

// uptimeAnswer is what `echo up-$(cut -d' ' -f1 /proc/uptime)-end`
// prints: the guest's uptime in seconds.
var uptimeAnswer = regexp.MustCompile(`up-([0-9]+\.[0-9]+)-end`)

// uptime reads the guest's uptime through the console.
func (c *virtctlConsole) uptime(t testing.TB) float64 {
	t.Helper()
	s := c.ask(t, "echo up-$(cut -d' ' -f1 /proc/uptime)-end", uptimeAnswer, time.Minute)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// runGuest creates the test guest's VMI ns/name on the world's node and
// waits until it runs and its shell waits on the console.
func (w *virtctlWorld) runGuest(t testing.TB, ns, name string) *virtv1.VirtualMachineInstance {
	t.Helper()
	w.create(t, bound(guestVMI(ns, name, 60, testguest.ActionACPI), w.node))
	vmi := w.waitReady(t, ns, name, 3*time.Minute)
	waitConsole(t, w.dir, ns, name, testguest.ShellMarker, 3*time.Minute)
	return vmi
}

// vmCRDFixture installs, when the API server does not serve
// VirtualMachines yet, a CustomResourceDefinition of KubeVirt's kind with
// a status subresource and a schema that keeps every field: what the
// subresources write to a VM is tested on it.
//
// TODO(VM controller): use the VirtualMachine CRD the VM controller's
// branch generates (crd package) once it is merged; testcluster then
// installs it and this finds it served.
func (w *virtctlWorld) vmCRDFixture(t testing.TB) {
	t.Helper()
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := apiextv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	crds, err := client.New(w.cluster.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	name := "virtualmachines." + virtv1.VirtualMachineGroupVersionKind.Group
	var existing apiextv1.CustomResourceDefinition
	if err := crds.Get(ctx, types.NamespacedName{Name: name}, &existing); err == nil {
		return
	} else if !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	keep := true
	crd := &apiextv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: virtv1.VirtualMachineGroupVersionKind.Group,
			Scope: apiextv1.NamespaceScoped,
			Names: apiextv1.CustomResourceDefinitionNames{Plural: "virtualmachines", Singular: "virtualmachine", Kind: "VirtualMachine", ShortNames: []string{"vm", "vms"}},
			Versions: []apiextv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema:       &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &apiextv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: &keep}},
				Subresources: &apiextv1.CustomResourceSubresources{Status: &apiextv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
	if err := crds.Create(ctx, crd); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		var vms virtv1.VirtualMachineList
		if err := w.client.List(ctx, &vms, client.InNamespace("default")); err == nil {
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("the VirtualMachine CRD is not served after a minute: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// getVM reads a VM from the API server.
func (w *virtctlWorld) getVM(t testing.TB, ns, name string) *virtv1.VirtualMachine {
	t.Helper()
	var vm virtv1.VirtualMachine
	if err := w.client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &vm); err != nil {
		t.Fatalf("get VM %s/%s: %v", ns, name, err)
	}
	return &vm
}

// syncBuffer is a buffer safe for concurrent writes, for a log.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// exitCode is the exit status of a finished command's error (0 for nil).
func exitCode(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}
