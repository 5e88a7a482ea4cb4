package nodeapi_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coder/websocket"
	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/testcluster"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
)

// pki issues, under one authority, the agent's serving certificate and
// the control plane's client certificate, and others that must be
// refused; it returns the folder of each.
func pki(t *testing.T) map[string]string {
	t.Helper()
	ca, err := testcluster.NewCA("nodes")
	if err != nil {
		t.Fatal(err)
	}
	other, err := testcluster.NewCA("other")
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dirs := map[string]string{}
	for name, issue := range map[string]func(dir string) error{
		"agent": func(d string) error {
			return ca.Issue(d, nodeapi.ServerName, x509.ExtKeyUsageServerAuth, nodeapi.ServerName)
		},
		"controlplane":   func(d string) error { return ca.Issue(d, nodeapi.ClientName, x509.ExtKeyUsageClientAuth) },
		"stranger":       func(d string) error { return ca.Issue(d, "someone-else", x509.ExtKeyUsageClientAuth) },
		"foreign":        func(d string) error { return other.Issue(d, nodeapi.ClientName, x509.ExtKeyUsageClientAuth) },
		"agent-misnamed": func(d string) error { return ca.Issue(d, "node01", x509.ExtKeyUsageServerAuth, "node01") },
	} {
		dirs[name] = filepath.Join(root, name)
		if err := issue(dirs[name]); err != nil {
			t.Fatal(err)
		}
	}
	return dirs
}

// serve serves h as an agent does, with the certificates of dir.
func serve(t *testing.T, dir string, h http.Handler) string {
	t.Helper()
	cfg, err := nodeapi.ServerTLS(dir)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.TLS = cfg
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// The control plane reaches an agent; nobody else does, and the control
// plane reaches nothing but an agent.
func TestMutualTLS(t *testing.T) {
	dirs := pki(t)
	ctx := context.Background()
	mux := http.NewServeMux()
	mux.HandleFunc(nodeapi.Pattern(nodeapi.Pause), func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("namespace") != "ns1" || r.PathValue("name") != "tiny" {
			http.Error(w, "wrong VMI", http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusAccepted)
	})
	mux.HandleFunc(nodeapi.Pattern(nodeapi.GuestOSInfo), func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "VMI ns1/nosuch does not exist", http.StatusNotFound)
	})
	mux.HandleFunc(nodeapi.Pattern(nodeapi.Console), func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{nodeapi.Subprotocol}})
		if err != nil {
			return
		}
		conn := websocket.NetConn(r.Context(), c, websocket.MessageBinary)
		defer conn.Close()
		_, _ = io.Copy(conn, conn) // an echo
	})
	addr := serve(t, dirs["agent"], mux)

	cp, err := nodeapi.NewClient(dirs["controlplane"])
	if err != nil {
		t.Fatal(err)
	}
	if err := cp.Put(ctx, addr, "ns1", "tiny", nodeapi.Pause); err != nil {
		t.Fatalf("the control plane's pause: %v", err)
	}
	var info any
	err = cp.Get(ctx, addr, "ns1", "nosuch", nodeapi.GuestOSInfo, &info)
	var serr *nodeapi.StatusError
	if !errors.As(err, &serr) || serr.Code != http.StatusNotFound || serr.Message != "VMI ns1/nosuch does not exist" {
		t.Errorf("an agent's 404: %v, want a *StatusError with its code and message", err)
	}
	conn, err := cp.Dial(ctx, addr, "ns1", "tiny", nodeapi.Console, url.Values{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, "hello"); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 5)
	if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != "hello" {
		t.Errorf("stream echoed %q, %v", buf, err)
	}
	conn.Close()

	for _, who := range []string{"stranger", "foreign"} {
		c, err := nodeapi.NewClient(dirs[who])
		if err != nil {
			t.Fatal(err)
		}
		// A foreign client also distrusts the agent: its authority is
		// another. Either way no request gets through.
		if err := c.Put(ctx, addr, "ns1", "tiny", nodeapi.Pause); err == nil {
			t.Errorf("the agent accepted the client certificate of %s", who)
		}
	}
	plain := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if resp, err := plain.Get("https://" + addr + nodeapi.Path("ns1", "tiny", nodeapi.GuestOSInfo)); err == nil {
		resp.Body.Close()
		t.Error("the agent answered a client without certificate")
	}

	misnamed := serve(t, dirs["agent-misnamed"], mux)
	if err := cp.Put(ctx, misnamed, "ns1", "tiny", nodeapi.Pause); err == nil || !strings.Contains(err.Error(), nodeapi.ServerName) {
		t.Errorf("the control plane called a server whose certificate is not an agent's: %v", err)
	}
}

func TestAddressOf(t *testing.T) {
	node := func(annotations map[string]string) *k8sv1.Node {
		return &k8sv1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node01", Annotations: annotations}}
	}
	if addr, err := nodeapi.AddressOf(node(map[string]string{nodeapi.AddressAnnotation: "10.0.0.7:8186"})); err != nil || addr != "10.0.0.7:8186" {
		t.Errorf("AddressOf: %q, %v", addr, err)
	}
	for value, want := range map[string]string{
		"":             `node node01: annotation vmi2libvirt.github.com/nodeagent-api: "" is not host:port`,
		"10.0.0.7":     `node node01: annotation vmi2libvirt.github.com/nodeagent-api: "10.0.0.7" is not host:port`,
		"0.0.0.0:8186": `node node01: annotation vmi2libvirt.github.com/nodeagent-api: "0.0.0.0:8186": 0.0.0.0 is no address to dial`,
		"[::]:8186":    `node node01: annotation vmi2libvirt.github.com/nodeagent-api: "[::]:8186": :: is no address to dial`,
		"host:0":       `node node01: annotation vmi2libvirt.github.com/nodeagent-api: "host:0" lacks a host or a port`,
	} {
		if _, err := nodeapi.AddressOf(node(map[string]string{nodeapi.AddressAnnotation: value})); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("AddressOf(%q): %v, want %s...", value, err, want)
		}
	}
	if _, err := nodeapi.AddressOf(node(nil)); err == nil || err.Error() != "node node01 has no annotation vmi2libvirt.github.com/nodeagent-api: no node agent serving the API runs there" {
		t.Errorf("AddressOf of a node without agent: %v", err)
	}
}
