package subresources

import (
	"context"
	"crypto/tls"
	"errors"
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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
)

// DefaultAddress is where Run listens by default: virt-api's port, on
// loopback (the API server of a one-machine cluster reaches it there).
const DefaultAddress = "127.0.0.1:8443"

// Config says how the server reaches the node agents, and where Run
// serves.
type Config struct {
	// NodeAgentCertDir holds the control plane's client certificate for
	// the node agents' API (tls.crt, tls.key: common name
	// nodeapi.ClientName) and the authority of the agents' serving
	// certificates (ca.crt). Required.
	NodeAgentCertDir string

	// Address and CertDir are Run's, for a server of its own: where it
	// listens, host:port (port 0: any free port, Server.Addr; empty:
	// DefaultAddress), and the folder of its serving certificate and key
	// (nodeapi.CertFile, KeyFile: tls.crt, tls.key), for the DNS name the
	// API server verifies, SERVICE.NAMESPACE.svc of the APIServices'
	// Service, signed by the authority of their caBundle, read again when
	// they change. Empty CertDir: the server is mounted on another HTTPS
	// server (Register, RequestClientCertificates, Start) and New listens
	// nowhere.
	Address string
	CertDir string

	// Logger receives the server's log; nil is silent.
	Logger *slog.Logger
}

// Server is KubeVirt's subresource API (virt-api's
// subresources.kubevirt.io) as an aggregated API server. Create it with
// New; serve it on a listener of its own with Run, or on another HTTPS
// server: Register its paths on that server's mux, let
// RequestClientCertificates ask for the aggregation layer's certificate in
// its TLS configuration, and run Start beside it (a controller-runtime
// manager.Runnable).
type Server struct {
	kube      client.Client // typed, no cache, no discovery (kubeMapper)
	discovery discovery.ServerVersionInterface
	agents    *nodeapi.Client
	authn     *requestHeaderAuth
	log       *slog.Logger

	// Run's own HTTPS server: its certificate, the TLS configuration that
	// follows it and the request-header authority, its listener.
	cert     *dynamiccertificates.DynamicCertKeyPairContent
	tls      *dynamiccertificates.DynamicServingCertificateController
	listener net.Listener
}

// New makes a server that acts through the API server restConfig reaches
// (reading VMIs, VMs and Nodes, patching VMs and VMIs, creating
// migrations and SubjectAccessReviews) and, with cfg.CertDir, listens on
// cfg.Address. It fails when the API server has no aggregation layer (no
// request-header authority in kube-system/extension-apiserver-authentication),
// a certificate cannot be read, or the address cannot be listened on.
func New(ctx context.Context, restConfig *rest.Config, cfg Config) (*Server, error) {
	if cfg.NodeAgentCertDir == "" {
		return nil, errors.New("subresources: Config.NodeAgentCertDir is required (the node agents' API is mutual TLS only)")
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
	s := &Server{kube: kube, discovery: cs.Discovery(), agents: agents, authn: authn, log: cfg.Logger}
	if cfg.CertDir == "" {
		return s, nil
	}
	s.cert, err = dynamiccertificates.NewDynamicServingContentFromFiles("subresources-serving-cert",
		filepath.Join(cfg.CertDir, nodeapi.CertFile), filepath.Join(cfg.CertDir, nodeapi.KeyFile))
	if err != nil {
		return nil, fmt.Errorf("subresources: serving certificate: %w", err)
	}
	base := &tls.Config{MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	s.RequestClientCertificates(base)
	s.tls = dynamiccertificates.NewDynamicServingCertificateController(base, authn.ca, s.cert, nil, nil)
	authn.ca.AddListener(s.tls)
	s.cert.AddListener(s.tls)
	if s.listener, err = net.Listen("tcp", cfg.Address); err != nil {
		return nil, fmt.Errorf("subresources: %w", err)
	}
	return s, nil
}

// Addr is the address Run listens on (nil for a mounted server).
func (s *Server) Addr() net.Addr {
	if s.listener == nil {
		return nil
	}
	return s.listener.Addr()
}

// RequestClientCertificates sets cfg, the TLS configuration of the HTTPS
// server the subresource API is served on, to ask clients for a
// certificate without verifying it: the request-header authenticator
// verifies it, against the authority the API server publishes now (the
// aggregation layer's requests come with its certificate; a client
// without one reaches only the paths anyone may read).
func (s *Server) RequestClientCertificates(cfg *tls.Config) {
	if cfg.ClientAuth < tls.RequestClientCert {
		cfg.ClientAuth = tls.RequestClientCert
	}
}

// Register registers the server's paths on mux, authenticated and
// authorized as virt-api's: / (exactly), /apis, /healthz and
// /apis/subresources.kubevirt.io with everything below it. (mux panics if
// another handler has one of them.)
func (s *Server) Register(mux *http.ServeMux) {
	h := s.Handler()
	for _, p := range []string{"/{$}", "/apis", "/healthz", "/apis/" + Group, "/apis/" + Group + "/"} {
		mux.Handle(p, h)
	}
}

// Handler is the server's handler of every path: virt-api's
// authentication and authorization, then its routes.
func (s *Server) Handler() http.Handler { return s.authorize(s.routes()) }

// Start follows the ConfigMap of the request-header authentication until
// ctx ends (it then returns nil, also when ctx ends before the first
// read), for a mounted server; it fails when the authority cannot be read
// within a minute. Requests served before Start has read it are
// authenticated with the authority New read.
func (s *Server) Start(ctx context.Context) error {
	if err := s.follow(ctx); err != nil && ctx.Err() == nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// NeedLeaderElection is false: every control plane serves requests.
func (s *Server) NeedLeaderElection() bool { return false }

// follow starts the controllers that follow the request-header
// authentication and waits until the authority has been read.
func (s *Server) follow(ctx context.Context) error {
	s.authn.run(ctx)
	waitCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for len(s.authn.ca.CurrentCABundleContent()) == 0 {
		select {
		case <-waitCtx.Done():
			return fmt.Errorf("subresources: the request-header authority of %s/%s was not read: %w", authConfigMapNamespace, authConfigMapName, waitCtx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// Run serves on the server's own listener, with its own certificate
// (Config.CertDir), until ctx ends; then it closes every connection,
// streams included, and returns nil. It fails for a mounted server, when
// the request-header authority cannot be read within a minute, or when
// serving fails.
func (s *Server) Run(ctx context.Context) error {
	if s.listener == nil {
		return errors.New("subresources: Run needs Config.CertDir (a mounted server is served by its program: Register, Start)")
	}
	defer s.listener.Close()
	if err := s.follow(ctx); err != nil {
		if ctx.Err() != nil {
			return nil // ended before the authority was read
		}
		return err
	}
	go s.cert.Run(ctx, 1)
	if err := s.tls.RunOnce(); err != nil {
		return fmt.Errorf("subresources: %w", err)
	}
	go s.tls.Run(1, ctx.Done())
	srv := &http.Server{
		Handler:           s.Handler(),
		TLSConfig:         &tls.Config{GetConfigForClient: s.tls.GetConfigForClient},
		ReadHeaderTimeout: 10 * time.Second,
		// Requests, and the streams they carry, end with ctx (a hijacked
		// connection outlives Shutdown and Close).
		BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
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
		handle("PUT", vm("addvolume"), s.vmVolume(true))
		handle("PUT", vm("removevolume"), s.vmVolume(false))
		handle("PUT", vmi("addvolume"), s.vmiVolume(true))
		handle("PUT", vmi("removevolume"), s.vmiVolume(false))
		for _, a := range vmiActions {
			handle("PUT", vmi(a.op), s.act(a))
		}
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
