package testcluster

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/controlplane/admission"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/scheme"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
)

// ControlPlaneUser is the user the control plane authenticates as; the
// committed RBAC (examples/nodeagent/deploy/controlplane-rbac.yaml) gives
// it its rights.
const ControlPlaneUser = "vmi2libvirt-controlplane"

// RBACPath is the control plane's committed RBAC below the repository's
// root.
func RBACPath(root string) string {
	return filepath.Join(root, "examples", "nodeagent", "deploy", "controlplane-rbac.yaml")
}

// ControlPlane is the control plane (command controlplane) of a Cluster,
// running as the separate process a person starts, with credentials of its
// own (ControlPlaneUser, with the committed RBAC: not the admin's), its
// serving certificate, and the webhook configurations installed that send
// VMs and VMIs to it.
type ControlPlane struct {
	*Process
	// Address is its HTTPS server's host:port (the webhooks).
	Address string
	// Metrics is the base URL of its metrics and health.
	Metrics string
	// Kubeconfig holds its credentials.
	Kubeconfig string

	tb                     testing.TB // the test that started it: each process lives until it ends
	bin, certFile, keyFile string
	extra                  []string // more flags, each start
}

var controlPlaneBuild struct {
	once sync.Once
	bin  string
	err  error
}

// buildControlPlane builds command controlplane once per test process,
// with the go command that runs the tests.
func buildControlPlane(tb testing.TB, root string) string {
	tb.Helper()
	hosttest.Tools(tb, "go")
	b := &controlPlaneBuild
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "testcluster-controlplane-")
		if err != nil {
			b.err = err
			return
		}
		b.bin = filepath.Join(dir, "controlplane")
		cmd := exec.Command("go", "build", "-o", b.bin, "./cmd/controlplane")
		cmd.Dir = filepath.Join(root, "examples", "nodeagent")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build ./cmd/controlplane: %v\n%s", err, out)
		}
	})
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.bin
}

// StartControlPlane starts the control plane of c, with the extra flags
// (such as -node-grace-period 10s), and waits until the API server sends
// VMs and VMIs through its webhooks. It is killed at the end of the test
// if it still runs.
func (c *Cluster) StartControlPlane(tb testing.TB, extra ...string) *ControlPlane {
	tb.Helper()
	root, err := RepoRoot()
	if err != nil {
		tb.Fatal(err)
	}
	cp := &ControlPlane{tb: tb, bin: buildControlPlane(tb, root), extra: extra}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	admin, err := client.New(c.Config, client.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	if err := applyFile(ctx, admin, RBACPath(root)); err != nil {
		tb.Fatal(err)
	}
	user, err := c.Env.AddUser(envtest.User{Name: ControlPlaneUser}, nil)
	if err != nil {
		tb.Fatal(err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	cp.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(cp.Kubeconfig, kubeconfig, 0o600); err != nil {
		tb.Fatal(err)
	}
	ca, err := writeServingCertificate(dir)
	if err != nil {
		tb.Fatal(err)
	}
	cp.certFile, cp.keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")

	cp.start(ctx, tb, "127.0.0.1:0")
	mutating, validating := admission.Configurations("https://"+cp.Address, ca)
	for _, obj := range []client.Object{mutating, validating} {
		if err := admin.Create(ctx, obj); err != nil {
			tb.Fatalf("installing %s: %v", obj.GetName(), err)
		}
	}
	waitForWebhooks(ctx, tb, c)
	return cp
}

// start starts the process, its HTTPS server on address.
func (cp *ControlPlane) start(ctx context.Context, tb testing.TB, address string) {
	tb.Helper()
	cmd := exec.Command(cp.bin, "-kubeconfig", cp.Kubeconfig, "-tls-cert-file", cp.certFile, "-tls-private-key-file", cp.keyFile,
		"-bind-address", address, "-metrics-address", "127.0.0.1:0")
	cmd.Args = append(cmd.Args, cp.extra...)
	cp.Process = StartProcess(cp.tb, "control plane", cmd)
	cp.Address = cp.Process.Address(ctx, tb, "controlplane: serving HTTPS")
	cp.Metrics = "http://" + cp.Process.Address(ctx, tb, "controlplane: serving metrics and health")
}

// Restart starts the control plane again after it stopped (or was
// killed), on the same HTTPS address, which the webhook configurations
// name, and waits until it serves. (Like the first, the process lives
// until the test that started the control plane ends.)
func (cp *ControlPlane) Restart(tb testing.TB) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cp.start(ctx, tb, cp.Address)
}

// waitForWebhooks waits until the API server has taken the webhook
// configurations in (it reads them asynchronously): a dry-run creation of
// a VMI is defaulted, and one with a floppy disk bus refused.
func waitForWebhooks(ctx context.Context, tb testing.TB, c *Cluster) {
	tb.Helper()
	s, err := scheme.New()
	if err != nil {
		tb.Fatal(err)
	}
	cl, err := client.New(c.Config, client.Options{Scheme: s})
	if err != nil {
		tb.Fatal(err)
	}
	probe := func(bus string) *v1.VirtualMachineInstance {
		return &v1.VirtualMachineInstance{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "webhook-probe"},
			Spec: v1.VirtualMachineInstanceSpec{
				Domain: v1.DomainSpec{
					Memory:  &v1.Memory{Guest: resource.NewQuantity(64<<20, resource.BinarySI)},
					Devices: v1.Devices{Disks: []v1.Disk{{Name: "d", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBus(bus)}}}}},
				},
				Volumes: []v1.Volume{{Name: "d", VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{Capacity: resource.MustParse("1Mi")}}}},
			},
		}
	}
	for {
		good := probe("virtio")
		errGood := cl.Create(ctx, good, client.DryRunAll)
		errBad := cl.Create(ctx, probe("floppy"), client.DryRunAll)
		mutated := errGood == nil && len(good.Finalizers) > 0
		refused := errBad != nil && strings.Contains(errBad.Error(), "denied the request")
		if mutated && refused {
			return
		}
		select {
		case <-ctx.Done():
			tb.Fatalf("the API server does not use the control plane's webhooks: dry-run creations answered %v (finalizers %v) and %v", errGood, good.Finalizers, errBad)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// applyFile creates the objects of a YAML file (several documents); those
// that exist are left as they are.
func applyFile(ctx context.Context, cl client.Client, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	d := k8syaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj unstructured.Unstructured
		err := d.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := cl.Create(ctx, &obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%s: creating %s %s: %w", path, obj.GetKind(), obj.GetName(), err)
		}
	}
}

// writeServingCertificate writes a certificate for 127.0.0.1 (tls.crt, its
// key tls.key) into dir, signed by a new authority, and returns that
// authority's certificate (PEM), which the webhook configurations trust.
func writeServingCertificate(dir string) ([]byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "testcluster control plane CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "vmi2libvirt-controlplane"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}), 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}
