package controlplane

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	v1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/certwatcher"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/scheme"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/serve"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
)

// Defaults of Config.
const (
	// DefaultAddress is where the HTTPS server listens: loopback, at
	// virt-api's port.
	DefaultAddress = "127.0.0.1:8443"
	// DefaultHTTPAddress serves metrics and health on loopback, beside the
	// node agent's 8080.
	DefaultHTTPAddress = "127.0.0.1:8081"
)

// Config says how the control plane serves and what it assumes of the
// cluster.
type Config struct {
	// CertFile and KeyFile are the HTTPS server's certificate (PEM, with
	// the chain to the authority the webhook configurations name) and
	// private key, reloaded when the files change. Required.
	CertFile, KeyFile string

	// Address is where the HTTPS server listens: the admission webhooks
	// (and every other handler a component registers). Empty:
	// DefaultAddress. A port 0 is chosen by the system and logged
	// ("serving HTTPS").
	Address string

	// HTTPAddress is where /metrics, /healthz and /readyz are served
	// (plain HTTP); empty: DefaultHTTPAddress; "off": nowhere. A port 0 is
	// chosen by the system and logged ("serving metrics and health").
	HTTPAddress string

	// NodeAgentCertDir holds the control plane's client certificate of the
	// node agents' API and the authority of their serving certificates
	// (tls.crt, tls.key, ca.crt; package nodeapi), through which the
	// subresource API reaches VMIs. Empty: no subresource API.
	NodeAgentCertDir string

	// NodeGracePeriod is how old a Node's heartbeat may be before the node
	// is dead: its VMIs fail (NodeUnresponsive); 0:
	// node.DefaultGracePeriod, KubeVirt's.
	NodeGracePeriod time.Duration

	// Cluster is the KubeVirt cluster configuration the admission defaults
	// follow; the zero value is KubeVirt's default.
	Cluster api.ClusterConfig

	// Scheduling are the KubeVirt feature gates that change what a VMI
	// requires of a migration's target node; the zero value is KubeVirt's
	// default. Node agents claim with their own (their -feature-gates):
	// give both the same.
	Scheduling nodeapi.Scheduling

	// Logger receives the control plane's log and controller-runtime's;
	// nil is silent.
	Logger *slog.Logger
}

// withDefaults returns cfg with its defaults applied, or an error naming
// a field that cannot work.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.CertFile == "" || cfg.KeyFile == "" {
		return cfg, errors.New("controlplane: Config.CertFile and Config.KeyFile are required (the webhooks are served over TLS)")
	}
	if cfg.Address == "" {
		cfg.Address = DefaultAddress
	}
	if cfg.HTTPAddress == "" {
		cfg.HTTPAddress = DefaultHTTPAddress
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg, nil
}

// ErrNoCRD is returned by Run when the API server does not serve
// KubeVirt's VirtualMachine or VirtualMachineInstance CRD.
var ErrNoCRD = errors.New("the API server does not serve kubevirt.io/v1 VirtualMachines and VirtualMachineInstances: install KubeVirt's CRDs (bash .ci/cluster.sh up does)")

// env is what a component adds itself to: the control plane's manager
// (its client, caches, Event recorders; runnables added to it start and
// stop with it), the HTTPS server's handlers and TLS configuration (a
// component may set client authorities on it: it is used once Run
// serves), and the configuration.
type env struct {
	ctx        context.Context
	mgr        manager.Manager
	mux        *http.ServeMux
	tls        *tls.Config
	restConfig *rest.Config
	user       string // the name the API server knows the control plane by
	cfg        Config
	log        *slog.Logger
}

// Run runs the control plane against the API server restConfig reaches
// (with no client-side rate limit unless restConfig sets a QPS) until ctx
// ends, then returns nil. It fails at once when the CRDs are not served
// (ErrNoCRD), the certificate cannot be read, or an address cannot be
// listened on.
func Run(ctx context.Context, restConfig *rest.Config, cfg Config) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	log := cfg.Logger
	if restConfig.QPS == 0 {
		// As the node agent: no client-side rate limit; the API server's
		// priority and fairness protect it.
		restConfig = rest.CopyConfig(restConfig)
		restConfig.QPS = -1
	}
	s, err := scheme.New()
	if err != nil {
		return err
	}
	if err := checkCRDs(ctx, restConfig, s); err != nil {
		return err
	}
	user, err := whoAmI(ctx, restConfig)
	if err != nil {
		return err
	}
	certs, err := certwatcher.New(cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return fmt.Errorf("controlplane: serving certificate: %w", err)
	}
	httpsListener, err := net.Listen("tcp", cfg.Address)
	if err != nil {
		return fmt.Errorf("controlplane: HTTPS: %w", err)
	}
	defer httpsListener.Close()

	mgr, err := ctrl.NewManager(restConfig, manager.Options{
		Scheme: s,
		Logger: logr.FromSlogHandler(log.Handler()),
		// The control plane serves metrics and health itself.
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return err
	}
	e := &env{
		ctx: ctx, mgr: mgr, mux: http.NewServeMux(), restConfig: restConfig, user: user, cfg: cfg, log: log,
		tls: &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certs.GetCertificate, NextProtos: []string{"http/1.1"}},
	}
	for _, c := range components {
		if err := c.add(e); err != nil {
			return fmt.Errorf("controlplane: %s: %w", c.name, err)
		}
	}
	serving := &atomic.Bool{}
	https := &serve.Server{Listener: httpsListener, Handler: e.mux, TLS: e.tls, Log: log, Message: "controlplane: serving HTTPS"}
	if err := errors.Join(mgr.Add(certs), mgr.Add(startedFlag(https, serving))); err != nil {
		return err
	}
	if cfg.HTTPAddress != "off" {
		if err := addHTTPServer(mgr, cfg.HTTPAddress, serving, log); err != nil {
			return err
		}
	}
	log.Info("controlplane: starting", "server", restConfig.Host, "user", user, "address", httpsListener.Addr().String())
	return mgr.Start(ctx)
}

// whoAmI is the user name the API server knows restConfig's credentials
// by (a SelfSubjectReview): the VMI update admission lets that user — the
// control plane's VM controller and subresource API — change VMI specs,
// as KubeVirt's lets its service accounts.
func whoAmI(ctx context.Context, restConfig *rest.Config) (string, error) {
	cs, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return "", err
	}
	review, err := cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("controlplane: who the API server knows me as (SelfSubjectReview): %w", err)
	}
	return review.Status.UserInfo.Username, nil
}

// checkCRDs fails at once, with the remedy, when the API server does not
// serve VMs or VMIs: the caches would retry their lists for ever.
func checkCRDs(ctx context.Context, restConfig *rest.Config, s *runtime.Scheme) error {
	direct, err := client.New(restConfig, client.Options{Scheme: s})
	if err != nil {
		return err
	}
	for _, list := range []client.ObjectList{&v1.VirtualMachineList{}, &v1.VirtualMachineInstanceList{}} {
		err := direct.List(ctx, list, client.Limit(1))
		switch {
		case meta.IsNoMatchError(err):
			return fmt.Errorf("%w (at %s): %w", ErrNoCRD, restConfig.Host, err)
		case err != nil:
			return fmt.Errorf("listing %T at %s: %w", list, restConfig.Host, err)
		}
	}
	return nil
}

// serves tells whether the API server serves the kind of list (a List of
// one answers).
func (e *env) serves(list client.ObjectList) bool {
	direct, err := client.New(e.restConfig, client.Options{Scheme: e.mgr.GetScheme()})
	if err != nil {
		return false
	}
	return direct.List(e.ctx, list, client.Limit(1)) == nil
}

// startedFlag wraps a runnable so that started is true while it runs.
func startedFlag(r manager.Runnable, started *atomic.Bool) manager.Runnable {
	return manager.RunnableFunc(func(ctx context.Context) error {
		started.Store(true)
		defer started.Store(false)
		return r.Start(ctx)
	})
}

// addHTTPServer listens on address and adds the server of /metrics,
// /healthz and /readyz (the caches are synced and the HTTPS server
// serves).
func addHTTPServer(mgr manager.Manager, address string, serving *atomic.Bool, log *slog.Logger) error {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return fmt.Errorf("controlplane: metrics and health: %w", err)
	}
	mux := http.NewServeMux()
	serve.MetricsAndHealth(mux, map[string]healthz.Checker{"ping": healthz.Ping}, map[string]healthz.Checker{
		"informers": func(req *http.Request) error {
			ctx, cancel := context.WithTimeout(req.Context(), time.Second)
			defer cancel()
			if !mgr.GetCache().WaitForCacheSync(ctx) {
				return errors.New("the caches of VMs and VMIs are not synced")
			}
			return nil
		},
		"https": func(*http.Request) error {
			if !serving.Load() {
				return errors.New("the HTTPS server (webhooks) does not serve yet")
			}
			return nil
		},
	})
	return mgr.Add(&serve.Server{Listener: ln, Handler: mux, Log: log, Message: "controlplane: serving metrics and health"})
}
