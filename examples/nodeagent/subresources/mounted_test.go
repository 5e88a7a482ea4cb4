package subresources_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/testcluster"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/subresources"
)

// A program serves the subresource API on its own HTTPS server (as the
// control plane serves it beside its webhooks): Register on its mux,
// RequestClientCertificates on its TLS configuration, Start beside it. The
// API server's aggregation layer reaches it, and requests go through
// virt-api's authentication and a SubjectAccessReview to the handlers.
func TestMounted(t *testing.T) {
	klog.SetLogger(logr.Discard()) // k8s.io/apiserver's controllers' lines
	c := testcluster.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	ca, err := testcluster.NewCA("serving")
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := testcluster.NewCA("nodes")
	if err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(
		ca.Issue(filepath.Join(dir, "serving"), "controlplane", x509.ExtKeyUsageServerAuth, "subresources.vmi2libvirt.svc"),
		nodes.Issue(filepath.Join(dir, "client"), nodeapi.ClientName, x509.ExtKeyUsageClientAuth),
	); err != nil {
		t.Fatal(err)
	}
	srv, err := subresources.New(ctx, c.Config, subresources.Config{NodeAgentCertDir: filepath.Join(dir, "client")})
	if err != nil {
		t.Fatal(err)
	}
	if srv.Addr() != nil {
		t.Errorf("a mounted server listens on %s", srv.Addr())
	}
	if err := srv.Run(ctx); err == nil || !strings.Contains(err.Error(), "Run needs Config.CertDir") {
		t.Errorf("Run of a mounted server: %v", err)
	}

	// The program's server.
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "serving", "tls.crt"), filepath.Join(dir, "serving", "tls.key"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}}
	srv.RequestClientCertificates(cfg)
	mux := http.NewServeMux()
	mux.HandleFunc("/webhook", func(w http.ResponseWriter, r *http.Request) {})
	srv.Register(mux)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	https := &http.Server{Handler: mux, TLSConfig: cfg}
	go func() { _ = https.Serve(tls.NewListener(ln, cfg)) }()
	defer https.Close()
	err = c.RegisterAPIService(ctx, testcluster.APIService{
		Group: subresources.Group, Versions: subresources.Versions, Namespace: "vmi2libvirt", Service: "subresources",
		Port: ln.Addr().(*net.TCPAddr).Port, CABundle: ca.PEM,
	})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	// As the administrator: the review allows it, the handler answers —
	// before Start has run, with the authority New read (the program may
	// serve before its manager starts Start).
	err = cs.CoreV1().RESTClient().Put().AbsPath("/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachineinstances/nosuch/pause").Do(ctx).Error()
	if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `virtualmachineinstance.kubevirt.io "nosuch" not found`) {
		t.Errorf("pause of a VMI that does not exist: %v, want virt-api's 404", err)
	}
	started := make(chan error, 1)
	go func() { started <- srv.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-started; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()
	out, stderr, err := c.Kubectl(ctx, "get", "--raw", "/apis/subresources.kubevirt.io/v1/namespaces/default/virtualmachineinstances/nosuch/guestosinfo")
	if err == nil || !strings.Contains(stderr, `virtualmachineinstance.kubevirt.io \"nosuch\" not found`) {
		t.Errorf("guestosinfo of a VMI that does not exist: %v\n%s%s", err, out, stderr)
	}
	t.Logf("kubectl get --raw .../guestosinfo: %s", strings.TrimSpace(stderr))
}
