package subresources

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
)

// DefaultAddress is where the server listens by default: virt-api's port,
// on loopback (the API server of a one-machine cluster reaches it there).
const DefaultAddress = "127.0.0.1:8443"

// Config says where the server listens and with which certificates.
type Config struct {
	// Address is where the server listens, host:port (port 0: any free
	// port, Server.Addr); empty: DefaultAddress. The APIServices'
	// Service must lead the API server here.
	Address string

	// CertDir holds the serving certificate and its key
	// (nodeapi.CertFile, KeyFile: tls.crt, tls.key), for the DNS name the
	// API server verifies, SERVICE.NAMESPACE.svc of the APIServices'
	// Service, signed by the authority of their caBundle. They are read
	// again when they change. Required.
	CertDir string

	// NodeAgentCertDir holds the control plane's client certificate for
	// the node agents' API (tls.crt, tls.key: common name
	// nodeapi.ClientName) and the authority of the agents' serving
	// certificates (ca.crt). Required.
	NodeAgentCertDir string

	// Logger receives the server's log; nil is silent.
	Logger *slog.Logger
}

// RegisterFlags registers the flags of cfg on fs, for a program that runs
// the server: -subresources-address, -subresources-certs and
// -nodeagent-certs.
func (cfg *Config) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&cfg.Address, "subresources-address", DefaultAddress,
		"`HOST:PORT` serving KubeVirt's subresource API (the APIService v1.subresources.kubevirt.io)")
	fs.StringVar(&cfg.CertDir, "subresources-certs", "",
		"`DIR` of the subresource API's serving certificate: tls.crt and tls.key (the APIService's caBundle signs them)")
	fs.StringVar(&cfg.NodeAgentCertDir, "nodeagent-certs", "",
		"`DIR` of the client certificate for the node agents' API: tls.crt and tls.key, and ca.crt (the agents' authority)")
}

// Server is KubeVirt's subresource API (virt-api's
// subresources.kubevirt.io) as an aggregated API server: create it with
// New, serve with Run.
type Server struct {
	kube      client.Client // typed, no cache, no discovery (kubeMapper)
	dynamic   dynamic.Interface
	discovery discovery.ServerVersionInterface
	agents    *nodeapi.Client
	authn     *requestHeaderAuth
	cert      *dynamiccertificates.DynamicCertKeyPairContent
	tls       *dynamiccertificates.DynamicServingCertificateController
	listener  net.Listener
	log       *slog.Logger
}

// New makes a server that acts through the API server restConfig reaches
// (reading VMIs, VMs and Nodes, patching VMs and VMIs, creating
// migrations and SubjectAccessReviews), and listens on cfg.Address. It
// fails when the API server has no aggregation layer (no request-header
// authority in kube-system/extension-apiserver-authentication), a
// certificate cannot be read, or the address cannot be listened on.
func New(ctx context.Context, restConfig *rest.Config, cfg Config) (*Server, error) {
	if cfg.CertDir == "" || cfg.NodeAgentCertDir == "" {
		return nil, errors.New("subresources: Config.CertDir and Config.NodeAgentCertDir are required")
	}
	if cfg.Address == "" {
		cfg.Address = DefaultAddress
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	scheme := runtime.NewScheme()
	if err := errors.Join(clientgoscheme.AddToScheme(scheme), v1.AddToScheme(scheme)); err != nil {
		return nil, err
	}
	kube, err := client.New(restConfig, client.Options{Scheme: scheme, Mapper: kubeMapper()})
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	agents, err := nodeapi.NewClient(cfg.NodeAgentCertDir)
	if err != nil {
		return nil, fmt.Errorf("subresources: %w", err)
	}
	authn, err := newRequestHeaderAuth(ctx, cs)
	if err != nil {
		return nil, err
	}
	cert, err := dynamiccertificates.NewDynamicServingContentFromFiles("subresources-serving-cert",
		filepath.Join(cfg.CertDir, nodeapi.CertFile), filepath.Join(cfg.CertDir, nodeapi.KeyFile))
	if err != nil {
		return nil, fmt.Errorf("subresources: serving certificate: %w", err)
	}
	// The client certificate is asked for, not verified by TLS: the
	// request-header authenticator verifies it against the authority the
	// API server publishes now (the aggregator's availability probe and
	// discovery requests come with it; a client without one reaches only
	// the paths anyone may read).
	base := &tls.Config{MinVersion: tls.VersionTLS12, ClientAuth: tls.RequestClientCert, NextProtos: []string{"http/1.1"}}
	tlsController := dynamiccertificates.NewDynamicServingCertificateController(base, authn.ca, cert, nil, nil)
	authn.ca.AddListener(tlsController)
	cert.AddListener(tlsController)
	ln, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		return nil, fmt.Errorf("subresources: %w", err)
	}
	return &Server{
		kube: kube, dynamic: dyn, discovery: cs.Discovery(), agents: agents, authn: authn,
		cert: cert, tls: tlsController, listener: ln, log: cfg.Logger,
	}, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() net.Addr { return s.listener.Addr() }

// Run serves until ctx ends; then it closes every connection, streams
// included, and returns nil. It fails when the request-header authority
// cannot be read within a minute, or serving fails.
func (s *Server) Run(ctx context.Context) error {
	defer s.listener.Close()
	s.authn.run(ctx)
	go s.cert.Run(ctx, 1)
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for len(s.authn.ca.CurrentCABundleContent()) == 0 {
		select {
		case <-waitCtx.Done():
			return fmt.Errorf("subresources: the request-header authority of %s/%s was not read: %w", authConfigMapNamespace, authConfigMapName, waitCtx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := s.tls.RunOnce(); err != nil {
		return fmt.Errorf("subresources: %w", err)
	}
	go s.tls.Run(1, ctx.Done())
	srv := &http.Server{
		Handler:           s.authorize(s.routes()),
		TLSConfig:         &tls.Config{GetConfigForClient: s.tls.GetConfigForClient},
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
	defer stop()
	s.log.Info("subresources: serving "+Group, "address", s.Addr().String())
	err := srv.Serve(tls.NewListener(s.listener, srv.TLSConfig))
	if errors.Is(err, http.ErrServerClosed) && ctx.Err() != nil {
		return nil
	}
	return err
}

// routes are the server's paths, for every version of the group.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, rootPaths()) })
	mux.HandleFunc("GET /apis", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList"}, Groups: []metav1.APIGroup{apiGroup()}})
	})
	mux.HandleFunc("GET /apis/"+Group, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, apiGroup()) })
	mux.HandleFunc("GET /healthz", s.healthz)
	vmi := func(op string) string { return "/namespaces/{namespace}/virtualmachineinstances/{name}/" + op }
	vm := func(op string) string { return "/namespaces/{namespace}/virtualmachines/{name}/" + op }
	for _, version := range Versions {
		base := "/apis/" + Group + "/" + version
		handle := func(method, path string, h http.HandlerFunc) { mux.HandleFunc(method+" "+base+path, h) }
		handle("GET", "", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, resourceList(version)) })
		handle("GET", "/version", func(w http.ResponseWriter, r *http.Request) { writeJSON(w, http.StatusOK, buildVersion()) })
		handle("GET", "/healthz", s.healthz)
		handle("PUT", vm("start"), s.startVM)
		handle("PUT", vm("stop"), s.stopVM)
		handle("PUT", vm("restart"), s.restartVM)
		handle("PUT", vm("migrate"), s.migrateVM)
		handle("PUT", vmi(nodeapi.Pause), s.act(nodeapi.Pause, checkPause, true))
		handle("PUT", vmi(nodeapi.Unpause), s.act(nodeapi.Unpause, checkUnpause, true))
		handle("PUT", vmi(nodeapi.SoftReboot), s.act(nodeapi.SoftReboot, checkSoftReboot, false))
		handle("GET", vmi(nodeapi.GuestOSInfo), s.get(nodeapi.GuestOSInfo, func() any { return &v1.VirtualMachineInstanceGuestAgentInfo{} }))
		handle("GET", vmi(nodeapi.UserList), s.get(nodeapi.UserList, func() any { return &v1.VirtualMachineInstanceGuestOSUserList{} }))
		handle("GET", vmi(nodeapi.FilesystemList), s.get(nodeapi.FilesystemList, func() any { return &v1.VirtualMachineInstanceFileSystemList{} }))
		handle("GET", vmi(nodeapi.Console), s.stream(nodeapi.Console, checkConsole))
		handle("GET", vmi(nodeapi.VNC), s.stream(nodeapi.VNC, checkDisplay))
	}
	return mux
}

// kubeMapper maps the kinds the server reads and writes to their
// resources without asking the API server: a kind it does not serve (a
// CRD not installed) is then the API server's 404 on the request, as a
// typed client gets it, not a mapping error.
func kubeMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	for _, gvk := range []schema.GroupVersionKind{
		v1.VirtualMachineInstanceGroupVersionKind,
		v1.VirtualMachineGroupVersionKind,
		v1.GroupVersion.WithKind("VirtualMachineInstanceMigration"),
	} {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	m.Add(k8sv1.SchemeGroupVersion.WithKind("Node"), meta.RESTScopeRoot)
	m.Add(authorizationv1.SchemeGroupVersion.WithKind("SubjectAccessReview"), meta.RESTScopeRoot)
	return m
}

// clientKey is the key of an object.
func clientKey(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}

// unstructuredOf wraps an object's fields.
func unstructuredOf(obj map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: obj}
}
