// Package testcluster starts a real kube-apiserver and etcd for a test, with
// KubeVirt's CRDs installed (VirtualMachineInstance, VirtualMachine,
// VirtualMachineInstanceMigration), through controller-runtime's envtest.
// The binaries are the ones .ci/kube/build.sh builds from their Go modules
// into /var/cache/vmi2libvirt/kube/<version>/ (KUBEBUILDER_ASSETS names
// another folder); the CRDs are the committed files of examples/nodeagent/crd.
//
// The API server runs with the aggregation layer, as .ci/cluster.sh's does
// (aggregation.go): RegisterAPIService registers an aggregated API server
// such as the subresource API, and FrontProxy holds the certificate it is
// called with. Virtctl finds KubeVirt's virtctl.
//
// Without the binaries a test is skipped, or fails when the environment
// variable CI is set, so CI never passes by skipping.
package testcluster

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// DefaultCache is where .ci/kube/build.sh puts one folder per Kubernetes
// version.
const DefaultCache = "/var/cache/vmi2libvirt/kube"

// Binaries are the three programs a Cluster runs or offers.
var Binaries = []string{"kube-apiserver", "etcd", "kubectl"}

// Cluster is a kube-apiserver and its etcd, started for one test and
// stopped when it ends.
type Cluster struct {
	// Config reaches the API server as an administrator (group
	// system:masters).
	Config *rest.Config
	// Kubeconfig is a kubeconfig file with the same identity, for programs
	// started by the test (kubectl, the node agent).
	Kubeconfig string
	// KubectlPath is the kubectl built with the server.
	KubectlPath string
	// Env is the envtest environment, for tests that stop or restart the
	// API server themselves.
	Env *envtest.Environment
	// FrontProxy is the folder of the aggregation layer's client
	// certificate (tls.crt, tls.key: common name FrontProxyName) and of
	// its authority (ca.crt, the API server's request-header authority),
	// for tests that call an aggregated API server as the API server does.
	FrontProxy string

	dir string // kubectl's cache, the logs
}

// Start starts a cluster for tb and registers its stop with tb.Cleanup. It
// skips tb (fails it under CI) when the binaries are missing, and fails it
// when the cluster does not start, with the tail of the servers' logs.
func Start(tb testing.TB) *Cluster {
	tb.Helper()
	root, err := RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	c, stop := start(tb, CRDPath(root))
	tb.Cleanup(stop)
	return c
}

// CRDPath is the folder of the committed CRDs (package crd) below the
// repository's root; envtest installs every YAML file in it.
func CRDPath(root string) string {
	return filepath.Join(root, "examples", "nodeagent", "crd")
}

// start starts a cluster with the CRDs of crdPath (a file or a folder) and
// returns it with the function that stops it (which reports to tb); when it
// fails it has stopped what it started.
func start(tb testing.TB, crdPath string) (*Cluster, func()) {
	tb.Helper()
	root, err := RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	assets, err := Assets(root)
	if errors.Is(err, ErrNoBinaries) {
		if os.Getenv("CI") != "" {
			tb.Fatalf("%v (CI is set: .ci/run builds them with .ci/kube/build.sh)", err)
		}
		tb.Skipf("%v; build them with: bash .ci/kube/build.sh", err)
	}
	if err != nil {
		tb.Fatal(err)
	}

	// envtest logs through controller-runtime's logger; without one set,
	// controller-runtime prints a warning with a stack trace.
	ctrllog.SetLogger(logr.Discard())

	dir, err := os.MkdirTemp("", "testcluster-")
	if err != nil {
		tb.Fatal(err)
	}
	apiLog, etcdLog := filepath.Join(dir, "kube-apiserver.log"), filepath.Join(dir, "etcd.log")
	env, err := newEnvironment(assets, crdPath, dir, apiLog, etcdLog)
	if err != nil {
		os.RemoveAll(dir)
		tb.Fatal(err)
	}
	stop := func() {
		if err := env.Stop(); err != nil {
			tb.Errorf("stopping the test cluster: %v", err)
		}
		closeLogs(env)
		os.RemoveAll(dir)
	}
	began := time.Now()
	cfg, err := env.Start()
	if err != nil {
		// envtest's Start leaves the servers running when a step after
		// starting them fails (the CRD install, the admin user).
		tails := logTails(apiLog, etcdLog)
		stop()
		tb.Fatalf("starting kube-apiserver and etcd from %s: %v\n%s", assets, err, tails)
	}
	tb.Logf("testcluster: kube-apiserver and etcd from %s ready, CRDs installed, in %s", assets, time.Since(began).Round(time.Millisecond))

	c := &Cluster{Config: cfg, KubectlPath: filepath.Join(assets, "kubectl"), Env: env, dir: dir,
		FrontProxy: frontProxyDir(env.ControlPlane.GetAPIServer().CertDir)}
	c.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(c.Kubeconfig, env.KubeConfig, 0o600); err != nil {
		stop()
		tb.Fatal(err)
	}
	return c, stop
}

// newEnvironment configures envtest with explicit binary paths (so neither
// TEST_ASSET_* variables nor USE_EXISTING_CLUSTER can send a test elsewhere),
// the servers' output in log files, and the API server's certificates in a
// folder of dir that outlives a restart of the API server.
func newEnvironment(assets, crdPath, dir, apiLog, etcdLog string) (*envtest.Environment, error) {
	existing := false
	env := &envtest.Environment{
		UseExistingCluster:    &existing,
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{crdPath},
		ErrorIfCRDPathMissing: true,
		// envtest's default of 20 s is short on a busy 2-core machine.
		ControlPlaneStartTimeout: 2 * time.Minute,
		ControlPlaneStopTimeout:  time.Minute,
	}
	api := env.ControlPlane.GetAPIServer()
	api.Path = filepath.Join(assets, "kube-apiserver")
	// envtest makes a temporary certificate folder of its own when none is
	// given, and a new one, with a new CA, each time the API server starts:
	// clients would not trust the restarted server.
	api.CertDir = filepath.Join(dir, "kube-apiserver")
	if err := os.Mkdir(api.CertDir, 0o700); err != nil {
		return nil, err
	}
	// On SIGTERM, answer new requests "retry later" until those in flight
	// are done, then close the connections within 2 s (as a production API
	// server behind a load balancer does). By default the server waits a
	// minute for its clients' watches to end, which they never do.
	api.Configure().Set("shutdown-send-retry-after", "true")
	if err := configureAggregation(api.CertDir, api.Configure()); err != nil {
		return nil, err
	}
	env.ControlPlane.KubectlPath = filepath.Join(assets, "kubectl")
	// etcd's data in a folder of dir, which envtest neither replaces nor
	// removes when etcd stops: a restarted etcd (StartEtcd) has it all.
	etcdData := filepath.Join(dir, "etcd")
	if err := os.Mkdir(etcdData, 0o700); err != nil {
		return nil, err
	}
	env.ControlPlane.Etcd = &envtest.Etcd{Path: filepath.Join(assets, "etcd"), DataDir: etcdData}
	var err error
	if api.Out, err = os.Create(apiLog); err != nil {
		return nil, err
	}
	api.Err = api.Out
	if env.ControlPlane.Etcd.Out, err = os.Create(etcdLog); err != nil {
		return nil, err
	}
	env.ControlPlane.Etcd.Err = env.ControlPlane.Etcd.Out
	return env, nil
}

func closeLogs(env *envtest.Environment) {
	for _, w := range []any{env.ControlPlane.GetAPIServer().Out, env.ControlPlane.Etcd.Out} {
		if f, ok := w.(*os.File); ok {
			f.Close()
		}
	}
}

// StopAPIServer stops the kube-apiserver; etcd keeps running. Clients
// then get "connection refused" until StartAPIServer.
func (c *Cluster) StopAPIServer() error {
	if err := c.Env.ControlPlane.GetAPIServer().Stop(); err != nil {
		return fmt.Errorf("stopping kube-apiserver: %w\n%s", err, logTails(filepath.Join(c.dir, "kube-apiserver.log")))
	}
	return nil
}

// StartAPIServer starts the kube-apiserver that StopAPIServer stopped, on
// the same address, with the same certificates and the same etcd: clients
// reconnect with the configuration and kubeconfig they had, and find
// every object.
func (c *Cluster) StartAPIServer() error {
	return c.Env.ControlPlane.GetAPIServer().Start()
}

// StopEtcd stops etcd; the API server keeps running and answers what
// needs storage with errors (or waits) until StartEtcd.
func (c *Cluster) StopEtcd() error {
	if err := c.Env.ControlPlane.Etcd.Stop(); err != nil {
		return fmt.Errorf("stopping etcd: %w\n%s", err, logTails(filepath.Join(c.dir, "etcd.log")))
	}
	return nil
}

// StartEtcd starts the etcd that StopEtcd stopped, on the same client
// address, with the same data: the API server reconnects and finds every
// object.
func (c *Cluster) StartEtcd() error {
	return c.Env.ControlPlane.Etcd.Start()
}

// Kubectl runs the cluster's kubectl with its kubeconfig and args, and
// returns what it printed on stdout and stderr; err is non-nil when it did
// not exit 0 (an *exec.ExitError) or did not run.
func (c *Cluster) Kubectl(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	full := append([]string{"--kubeconfig", c.Kubeconfig, "--cache-dir", filepath.Join(c.dir, "kubectl-cache")}, args...)
	cmd := exec.CommandContext(ctx, c.KubectlPath, full...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// ErrNoBinaries is returned by Assets when a binary is missing.
var ErrNoBinaries = errors.New("testcluster: kube-apiserver, etcd or kubectl not built")

// Assets returns the folder holding the three binaries: KUBEBUILDER_ASSETS
// when set, else DefaultCache/<version> with the k8s.io/kubernetes version
// that root/.ci/kube/go.mod requires. It wraps ErrNoBinaries when one is
// missing.
func Assets(root string) (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		version, err := KubernetesVersion(root)
		if err != nil {
			return "", err
		}
		dir = filepath.Join(DefaultCache, version)
	}
	for _, b := range Binaries {
		if info, err := os.Stat(filepath.Join(dir, b)); err != nil || info.Mode()&0o111 == 0 {
			return dir, fmt.Errorf("%w: no executable %s in %s", ErrNoBinaries, b, dir)
		}
	}
	return dir, nil
}

// KubernetesVersion reads the k8s.io/kubernetes version .ci/kube/go.mod
// requires, from its one-line `require k8s.io/kubernetes vX.Y.Z` (followed
// by `// indirect`, since only the tool directives use it), as build.sh reads
// it too.
func KubernetesVersion(root string) (string, error) {
	path := filepath.Join(root, ".ci", "kube", "go.mod")
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fields := strings.Fields(s.Text()); len(fields) >= 3 && fields[0] == "require" && fields[1] == "k8s.io/kubernetes" {
			return fields[2], nil
		}
	}
	if err := s.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("testcluster: %s has no line `require k8s.io/kubernetes VERSION`", path)
}

// RepoRoot finds the repository's root from the working directory (a test
// runs in its package's folder): the nearest folder above with .ci/kube.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, ".ci", "kube", "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testcluster: no folder above the working directory holds .ci/kube/go.mod")
		}
		dir = parent
	}
}

// logTails returns the last lines of each log, for a failure message.
func logTails(paths ...string) string {
	var b strings.Builder
	for _, p := range paths {
		data, _ := os.ReadFile(p)
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > 20 {
			lines = lines[len(lines)-20:]
		}
		fmt.Fprintf(&b, "--- last lines of %s:\n%s\n", filepath.Base(p), strings.Join(lines, "\n"))
	}
	return b.String()
}
