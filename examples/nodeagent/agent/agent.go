package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path"
	"time"

	"github.com/go-logr/logr"
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	v1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/scheme"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/internal/serve"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
)

// Defaults of Config.
const (
	// DefaultWorkers is virt-handler's number of VMI workers.
	DefaultWorkers = 10
	// DefaultHTTPAddress serves metrics and health on loopback, at
	// controller-runtime's usual metrics port.
	DefaultHTTPAddress = "127.0.0.1:8080"
)

// EventSource is the component name of the Events the agent records (with
// the node's name as their host), as virt-handler's are "virt-handler".
const EventSource = "vmi2libvirt-nodeagent"

// Retry backoff of a VMI whose reconcile failed (the host is not ready,
// libvirt or the API server cannot be reached): from retryMin, doubling
// per failure, to retryMax.
const (
	retryMin = 200 * time.Millisecond
	retryMax = 10 * time.Second
)

// Config says which node an agent is and how it runs that node's VMIs.
type Config struct {
	// Node is this node's name: the agent runs the VMIs labelled
	// kubevirt.io/nodeName=Node, and it is the launcher's owner (the
	// domains it defines are recorded as this node's). Required.
	Node string

	// Claim makes the agent also bind unbound VMIs (no
	// kubevirt.io/nodeName label) that may run on this node: whose
	// spec.nodeSelector and required node affinity match NodeLabels (with
	// kubernetes.io/hostname=Node) and Node.
	Claim bool
	// NodeLabels are this node's labels, for Claim.
	NodeLabels labels.Set

	// Launcher configures the launcher that runs the VMIs. Its Owner is
	// Node (another non-empty Owner is refused) and its Logger Logger's
	// when unset.
	Launcher launcher.Config

	// HTTPAddress is where /metrics, /healthz, /readyz and /consoles (the
	// stream ports of StreamAddress) are served;
	// empty: DefaultHTTPAddress; "off": nowhere. A port 0 is chosen by the
	// system and logged ("serving metrics and health").
	HTTPAddress string

	// StreamAddress is the IP address on which each VMI running here gets
	// TCP ports of its own, port chosen by the system: its serial console
	// (raw bytes), its VNC display (RFB) and the same display as a
	// WebSocket (noVNC's); they are listed at /consoles of HTTPAddress
	// (VMIStreams) and logged. Empty: no ports. Anyone who reaches a port
	// reaches the VMI, unauthenticated: keep it on loopback (127.0.0.1,
	// ::1); any other address is served too, with a warning.
	StreamAddress string

	// StreamOrigins are the web origins, besides a port's own host and
	// port, whose pages may open the VNC WebSocket ports: host patterns
	// of path.Match, such as "localhost:6080" for a noVNC page served
	// there (stream.Server.OriginPatterns). Empty: none.
	StreamOrigins []string

	// APIAddress is where the agent serves the node API (package nodeapi)
	// to the control plane, which reaches this node's VMIs through it
	// (virtctl console, vnc, pause, unpause, soft-reboot, guestosinfo):
	// host:port of an address the control plane can dial (not 0.0.0.0;
	// port 0: any free port, logged), mutual TLS with the certificates of
	// APICertDir. While the agent serves it, the address is in its Node
	// object's nodeapi.AddressAnnotation (the agent creates the Node when
	// there is none). Empty: no node API.
	APIAddress string
	// APICertDir is the folder of the node API's certificates: the
	// agent's serving certificate and key (nodeapi.CertFile, KeyFile, for
	// the DNS name nodeapi.ServerName) and the authority of the control
	// plane's client certificate (nodeapi.CAFile). Required with
	// APIAddress.
	APICertDir string

	// HeartbeatInterval is the longest time between two heartbeats the
	// agent writes to its Node (kubevirt.io/heartbeat, with
	// kubevirt.io/schedulable and Labeller's labels); 0:
	// DefaultHeartbeatInterval. Changes are written at once (libvirt is
	// probed every heartbeatCheck).
	HeartbeatInterval time.Duration
	// Labeller gives the labels of what this node can run, for its Node;
	// nil: HostLabels of the launcher's host facts and NodeLabels.
	Labeller NodeLabeller
	// Scheduling are the cluster's choices of what a VMI requires of its
	// node, for Claim (nodeapi.Scheduling.Fits); the zero value is
	// KubeVirt's default.
	Scheduling nodeapi.Scheduling

	// MigrationBandwidth caps the stream of each live migration from this
	// node, in bytes per second (KubeVirt's
	// migrations.bandwidthPerMigration); 0: unlimited.
	MigrationBandwidth uint64

	// Workers is how many VMIs are reconciled at once; 0: DefaultWorkers.
	Workers int

	// Logger receives the agent's log and controller-runtime's; nil is
	// silent.
	Logger *slog.Logger
}

// withDefaults returns cfg with its defaults applied, or an error naming
// a field that cannot work.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Node == "" {
		return cfg, errors.New("agent: Config.Node is empty")
	}
	switch cfg.Launcher.Owner {
	case "":
		cfg.Launcher.Owner = cfg.Node
	case cfg.Node:
	default:
		return cfg, fmt.Errorf("agent: Config.Launcher.Owner %q is not Config.Node %q: the launcher's owner is the node", cfg.Launcher.Owner, cfg.Node)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Launcher.Logger == nil {
		cfg.Launcher.Logger = cfg.Logger
	}
	if cfg.HTTPAddress == "" {
		cfg.HTTPAddress = DefaultHTTPAddress
	}
	if cfg.HeartbeatInterval <= 0 {
		cfg.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if cfg.Workers <= 0 {
		cfg.Workers = DefaultWorkers
	}
	if cfg.StreamAddress != "" && net.ParseIP(cfg.StreamAddress) == nil {
		return cfg, fmt.Errorf("agent: Config.StreamAddress %q is not an IP address (such as 127.0.0.1)", cfg.StreamAddress)
	}
	if err := checkAPIAddress(cfg.APIAddress, cfg.APICertDir); err != nil {
		return cfg, err
	}
	for i, o := range cfg.StreamOrigins {
		if _, err := path.Match(o, ""); err != nil || o == "" {
			return cfg, fmt.Errorf("agent: Config.StreamOrigins[%d] %q is not a host pattern (such as localhost:6080)", i, o)
		}
	}
	return cfg, nil
}

// NewScheme knows Kubernetes' built-in types and KubeVirt's kubevirt.io/v1.
func NewScheme() (*runtime.Scheme, error) {
	return scheme.New()
}

// ErrNoCRD is returned by Run when the API server does not serve
// KubeVirt's VirtualMachineInstance CRD.
var ErrNoCRD = errors.New("the API server does not serve kubevirt.io/v1 VirtualMachineInstances: install KubeVirt's CRD (bash .ci/cluster.sh up does)")

// Run runs the node agent against the API server restConfig reaches (with
// no client-side rate limit unless restConfig sets a QPS), until ctx ends; then it stops watching and returns nil, leaving the guests
// running (a new agent of the same node adopts them). It fails at once
// when the CRD is not served (ErrNoCRD), libvirt cannot be reached, or the
// HTTP address cannot be listened on.
func Run(ctx context.Context, restConfig *rest.Config, cfg Config) error {
	a, err := build(ctx, restConfig, cfg)
	if err != nil {
		return err
	}
	defer a.close()
	return a.mgr.Start(ctx)
}

// built is an agent ready to start: its manager, the reconciler of its
// VMIs, and what closes the rest once the manager has stopped (the
// launcher last).
type built struct {
	mgr     manager.Manager
	runner  *vmiReconciler
	closers []func()
}

// close closes what build opened, in the reverse order.
func (a *built) close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
}

// build makes everything Run starts: it checks the CRD, connects the
// launcher, and adds the agent's controllers and servers to a manager.
// On error it has closed what it opened.
func build(ctx context.Context, restConfig *rest.Config, cfg Config) (_ *built, err error) {
	a := &built{}
	defer func() {
		if err != nil {
			a.close()
		}
	}()
	cfg, err = cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	log := cfg.Logger.With("node", cfg.Node)
	if restConfig.QPS == 0 {
		// As controller-runtime's own config loader: no client-side rate
		// limit (client-go's default is 5 requests a second, which a burst
		// of VMIs exceeds at once); the API server's priority and fairness
		// protect it.
		restConfig = rest.CopyConfig(restConfig)
		restConfig.QPS = -1
	}
	scheme, err := NewScheme()
	if err != nil {
		return nil, err
	}
	mine := labels.SelectorFromSet(labels.Set{v1.NodeNameLabel: cfg.Node})
	if err := checkCRD(ctx, restConfig, scheme, mine); err != nil {
		return nil, err
	}

	l, err := launcher.New(ctx, cfg.Launcher)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, func() { _ = l.Close() })
	if cfg.Labeller == nil {
		cfg.Labeller = HostLabels{Facts: l.HostFacts, Static: cfg.NodeLabels}
	}
	direct, err := client.New(restConfig, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	removeStale(ctx, l, direct, cfg.Node, log)
	var streams *streamServers
	if cfg.StreamAddress != "" {
		if !net.ParseIP(cfg.StreamAddress).IsLoopback() {
			log.Warn("nodeagent: the VMIs' console and VNC ports are served beyond loopback, unauthenticated", "address", cfg.StreamAddress)
		}
		streams = newStreamServers(cfg.StreamAddress, cfg.StreamOrigins, l, log)
		a.closers = append(a.closers, streams.closeAll) // before the launcher closes
	}

	mgr, err := ctrl.NewManager(restConfig, manager.Options{
		Scheme: scheme,
		Logger: logr.FromSlogHandler(cfg.Logger.Handler()),
		// The agent serves metrics and health itself (httpHandler).
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// This node's VMIs only, as virt-handler watches them.
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&v1.VirtualMachineInstance{}: {Label: mine},
		}},
	})
	if err != nil {
		return nil, err
	}
	events, stopEvents, err := newRecorder(restConfig, scheme, cfg.Node)
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, stopEvents)
	metrics := newAgentMetrics(cfg.Node, mgr.GetCache())
	unregister, err := metrics.register()
	if err != nil {
		return nil, err
	}
	a.closers = append(a.closers, unregister)

	w := &writer{client: mgr.GetClient(), events: events, node: cfg.Node, metrics: metrics}
	migr := &migrations{client: mgr.GetClient(), reader: mgr.GetAPIReader(), launcher: l, cfg: cfg.Launcher, node: cfg.Node, log: log,
		bandwidth: cfg.MigrationBandwidth, running: map[types.UID]context.CancelFunc{}, left: map[types.UID]types.NamespacedName{}}
	w.migrations = migr
	if a.runner, err = addVMIControllers(ctx, mgr, l, w, streams, cfg.Workers, log); err != nil {
		return nil, err
	}
	nodes, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	if err := addMigrations(mgr, nodes, migr); err != nil {
		return nil, err
	}
	if cfg.Claim {
		if err := addClaimController(mgr, restConfig, scheme, cfg, events, metrics, log); err != nil {
			return nil, err
		}
	}
	if cfg.HTTPAddress != "off" {
		if err := addHTTPServer(mgr, l, streams, cfg.HTTPAddress, log); err != nil {
			return nil, err
		}
	}
	if cfg.APIAddress != "" {
		if err := addAPIServer(mgr, restConfig, l, events, cfg, log); err != nil {
			return nil, err
		}
	}
	if err := addHeartbeat(mgr, restConfig, l, cfg, log); err != nil {
		return nil, err
	}
	log.Info("nodeagent: starting", "selector", mine.String(), "server", restConfig.Host, "owner", l.Owner(),
		"stateDir", cfg.Launcher.Layout.StateDir, "emulate", cfg.Launcher.Emulate, "claim", cfg.Claim, "nodeLabels", cfg.NodeLabels.String())
	a.mgr = mgr
	return a, nil
}

// checkCRD fails at once, with the remedy, when the API server does not
// serve VMIs: the cache would retry its list for ever.
func checkCRD(ctx context.Context, restConfig *rest.Config, scheme *runtime.Scheme, mine labels.Selector) error {
	direct, err := client.New(restConfig, client.Options{Scheme: scheme})
	if err != nil {
		return err
	}
	err = direct.List(ctx, &v1.VirtualMachineInstanceList{}, client.MatchingLabelsSelector{Selector: mine}, client.Limit(1))
	switch {
	case meta.IsNoMatchError(err):
		return fmt.Errorf("%w (at %s): %w", ErrNoCRD, restConfig.Host, err)
	case err != nil:
		return fmt.Errorf("listing VirtualMachineInstances at %s: %w", restConfig.Host, err)
	}
	return nil
}

// addVMIControllers adds the controllers of the node's VMIs: vmiReconciler,
// fed by the API server's events of the node's VMIs and by libvirt's of
// the VMIs leaving the host, and statusReconciler, fed by libvirt's; plus
// the runnables that feed them from the launcher: its Watch channel, and
// the sweep of its domains at start. With streams, streamsReconciler too,
// fed by both. It returns the vmiReconciler.
func addVMIControllers(ctx context.Context, mgr manager.Manager, l *launcher.Launcher, w *writer, streams *streamServers, workers int, log *slog.Logger) (*vmiReconciler, error) {
	view := newLauncherView()
	toRunner, toStatus := make(chan vmiEvent, 1024), make(chan vmiEvent, 1024)
	outs := []chan<- vmiEvent{toRunner, toStatus}
	var toStreams chan vmiEvent
	if streams != nil {
		toStreams = make(chan vmiEvent, 1024)
		outs = append(outs, toStreams)
	}
	err := errors.Join(
		mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			return forwardWatch(ctx, l, view, outs...)
		})),
		mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
			return sweepOrphans(ctx, l, mgr.GetCache(), view, toRunner, log)
		})),
	)
	if err != nil {
		return nil, err
	}
	enqueue := &handler.TypedEnqueueRequestForObject[*v1.VirtualMachineInstance]{}
	// The runner needs libvirt's events only for the VMIs it takes off the
	// host (deleting, or gone); the others' status is statusReconciler's.
	leaving := predicate.NewTypedPredicateFuncs(func(ref *v1.VirtualMachineInstance) bool {
		var vmi v1.VirtualMachineInstance
		err := mgr.GetCache().Get(ctx, client.ObjectKeyFromObject(ref), &vmi)
		return err != nil || vmi.DeletionTimestamp != nil
	})
	runner := &vmiReconciler{writer: w, client: mgr.GetClient(), launcher: l, view: view, synced: newSyncMemo(), log: log}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("vmi").
		For(&v1.VirtualMachineInstance{}).
		WatchesRawSource(source.Channel(toRunner, enqueue, source.WithPredicates[*v1.VirtualMachineInstance, reconcile.Request](leaving))).
		WithOptions(controllerOptions(workers)).
		Complete(runner)
	if err != nil {
		return nil, err
	}
	err = ctrl.NewControllerManagedBy(mgr).
		Named("vmi-status").
		WatchesRawSource(source.Channel(toStatus, enqueue)).
		WithOptions(controllerOptions(workers)).
		Complete(&statusReconciler{writer: w, client: mgr.GetClient(), view: view})
	if err != nil || streams == nil {
		return runner, err
	}
	return runner, ctrl.NewControllerManagedBy(mgr).
		Named("vmi-streams").
		For(&v1.VirtualMachineInstance{}).
		WatchesRawSource(source.Channel(toStreams, enqueue)).
		WithOptions(controllerOptions(workers)).
		Complete(&streamsReconciler{client: mgr.GetClient(), view: view, streams: streams, ctx: ctx})
}

// controllerOptions are the options of the agent's controllers: workers
// VMIs at once, failures retried from retryMin to retryMax. (Controller
// names are checked for uniqueness per process; the agent's are its own,
// and a process may run one agent after another.)
func controllerOptions(workers int) controller.Options {
	return controller.Options{
		MaxConcurrentReconciles: workers,
		RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](retryMin, retryMax),
		SkipNameValidation:      ptr.To(true),
	}
}

// addClaimController adds the claim controller, with a cache of its own
// holding the unbound VMIs and this node's Node.
func addClaimController(mgr manager.Manager, restConfig *rest.Config, scheme *runtime.Scheme, cfg Config, events record.EventRecorder, metrics *agentMetrics, log *slog.Logger) error {
	unbound, err := cache.New(restConfig, cache.Options{
		Scheme:     scheme,
		HTTPClient: mgr.GetHTTPClient(),
		Mapper:     mgr.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{
			&v1.VirtualMachineInstance{}: {Label: unboundSelector()},
			&k8sv1.Node{}:                {Field: fields.OneTermEqualSelector("metadata.name", cfg.Node)},
		},
	})
	if err != nil {
		return err
	}
	if err := mgr.Add(unbound); err != nil {
		return err
	}
	c := &claimReconciler{
		unbound: unbound, api: mgr.GetAPIReader(), client: mgr.GetClient(),
		node: cfg.Node, scheduling: cfg.Scheduling, events: events, metrics: metrics, log: log,
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("vmi-claim").
		WatchesRawSource(source.Kind(unbound, &v1.VirtualMachineInstance{}, &handler.TypedEnqueueRequestForObject[*v1.VirtualMachineInstance]{})).
		WithOptions(controllerOptions(1)).
		Complete(c)
}

// addHTTPServer listens on address and adds the server of /metrics,
// /healthz, /readyz and /consoles (the ports of streams; nil: off).
func addHTTPServer(mgr manager.Manager, l *launcher.Launcher, streams *streamServers, address string, log *slog.Logger) error {
	ln, err := net.Listen("tcp", address)
	if err != nil {
		return fmt.Errorf("agent: metrics and health: %w", err)
	}
	readyz := map[string]healthz.Checker{
		"informers": func(req *http.Request) error {
			ctx, cancel := context.WithTimeout(req.Context(), time.Second)
			defer cancel()
			if !mgr.GetCache().WaitForCacheSync(ctx) {
				return errors.New("the cache of this node's VMIs is not synced")
			}
			return nil
		},
		"libvirt": func(req *http.Request) error {
			ctx, cancel := context.WithTimeout(req.Context(), 5*time.Second)
			defer cancel()
			_, err := l.List(ctx)
			return err
		},
	}
	return mgr.Add(&serve.Server{
		Listener: ln,
		Handler:  httpHandler(map[string]healthz.Checker{"ping": healthz.Ping}, readyz, consolesHandler{streams: streams}),
		Log:      log,
		Message:  "nodeagent: serving metrics and health",
	})
}

// checkAPIAddress refuses a node API address the control plane could not
// dial, or one without certificates.
func checkAPIAddress(addr, certDir string) error {
	if addr == "" {
		if certDir != "" {
			return errors.New("agent: Config.APICertDir without Config.APIAddress")
		}
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("agent: Config.APIAddress %q is not host:port: %w", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		return fmt.Errorf("agent: Config.APIAddress %q: listen on an address the control plane can dial (it is written to the Node), not on every address", addr)
	}
	if certDir == "" {
		return fmt.Errorf("agent: Config.APIAddress %q needs Config.APICertDir (the node API is mutual TLS only)", addr)
	}
	return nil
}

// addAPIServer reads the node API's certificates, listens on the node API
// address and adds its server.
func addAPIServer(mgr manager.Manager, restConfig *rest.Config, l *launcher.Launcher, events record.EventRecorder, cfg Config, log *slog.Logger) error {
	tlsConfig, err := nodeapi.ServerTLS(cfg.APICertDir)
	if err != nil {
		return fmt.Errorf("agent: node API: %w", err)
	}
	nodes, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.APIAddress)
	if err != nil {
		return fmt.Errorf("agent: node API: %w", err)
	}
	return mgr.Add(&apiServer{
		listener: ln, tls: tlsConfig, node: cfg.Node, nodes: nodes, vmis: mgr.GetCache(),
		launcher: l, events: events, log: log,
	})
}

// heartbeatCheck is how often the heartbeat asks libvirt and the labeller
// whether what it writes has changed.
const heartbeatCheck = 2 * time.Second

// addHeartbeat adds the heartbeat of the node's Node: libvirt answers
// when the launcher lists its domains.
func addHeartbeat(mgr manager.Manager, restConfig *rest.Config, l *launcher.Launcher, cfg Config, log *slog.Logger) error {
	nodes, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	return mgr.Add(&heartbeat{
		node: cfg.Node, nodes: nodes, labeller: cfg.Labeller, interval: cfg.HeartbeatInterval,
		check: min(heartbeatCheck, cfg.HeartbeatInterval), log: log,
		probe: func(ctx context.Context) error { _, err := l.List(ctx); return err },
	})
}

// newRecorder makes the agent's Event recorder: Events from EventSource on
// host node, as virt-handler's come from "virt-handler" on its node. The
// returned function flushes and stops it.
func newRecorder(restConfig *rest.Config, scheme *runtime.Scheme, node string) (record.EventRecorder, func(), error) {
	cs, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, nil, err
	}
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	return b.NewRecorder(scheme, k8sv1.EventSource{Component: EventSource, Host: node}), b.Shutdown, nil
}
