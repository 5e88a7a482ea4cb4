package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/stream"
)

// fieldManager is the agent's name in the managed fields of what it
// applies (its Node's AddressAnnotation).
const fieldManager = "vmi2libvirt-nodeagent"

// apiServer serves the node API (package nodeapi) to the control plane,
// over mutual TLS, on one listener opened before the manager starts: the
// console and VNC display of the node's running VMIs as WebSockets,
// pause, unpause, soft reboot and the guest's information, as
// virt-handler serves them to virt-api. While it serves, the node's Node
// object holds its address (nodeapi.AddressAnnotation).
type apiServer struct {
	listener net.Listener // plain TCP; TLS is added by Start
	tls      *tls.Config
	node     string
	nodes    kubernetes.Interface // writes the annotation
	vmis     client.Reader        // the cache of the node's VMIs
	launcher *launcher.Launcher
	events   record.EventRecorder
	log      *slog.Logger

	vncMu sync.Mutex
	vnc   map[types.UID]*vncSession // the VNC connection of each VMI
}

// vncSession is one VNC connection of a VMI; cancel ends it.
type vncSession struct{ cancel context.CancelFunc }

// Start serves until ctx ends; then it closes the connections, streams
// included, and takes the node's annotation away.
func (s *apiServer) Start(ctx context.Context) error {
	addr := s.listener.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc(nodeapi.Pattern(nodeapi.Console), s.stream(func(ctx context.Context, vmi *v1.VirtualMachineInstance) (io.ReadWriteCloser, error) {
		// A new connection takes the console over, as virt-handler's
		// closes the earlier one.
		return s.launcher.Console(ctx, vmi, launcher.ConsoleOptions{Force: true})
	}))
	mux.HandleFunc(nodeapi.Pattern(nodeapi.VNC), s.serveVNC)
	for op, act := range map[string]action{
		nodeapi.Pause:      {s.launcher.Pause, eventPaused},
		nodeapi.Unpause:    {s.launcher.Unpause, eventUnpaused},
		nodeapi.SoftReboot: {s.launcher.SoftReboot, eventSoftRebooted},
	} {
		mux.HandleFunc(nodeapi.Pattern(op), s.act(op, act))
	}
	mux.HandleFunc(nodeapi.Pattern(nodeapi.GuestOSInfo), s.guestOSInfo)
	for _, op := range []string{nodeapi.UserList, nodeapi.FilesystemList} {
		mux.HandleFunc(nodeapi.Pattern(op), func(w http.ResponseWriter, r *http.Request) {
			if _, ok := s.vmi(w, r); ok {
				http.Error(w, "the launcher does not read the guest agent's "+op, http.StatusNotImplemented)
			}
		})
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		// Requests, and the streams they carry, end with ctx.
		BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	advertising, stopAdvertising := context.WithCancel(ctx)
	advertised := make(chan struct{})
	go func() {
		defer close(advertised)
		s.advertise(advertising, addr)
	}()
	stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
	defer stop()
	s.log.Info("nodeagent: serving the node API (mutual TLS)", "address", addr)
	err := srv.Serve(tls.NewListener(s.listener, s.tls))
	stopAdvertising()
	<-advertised
	s.withdraw()
	if errors.Is(err, http.ErrServerClosed) && ctx.Err() != nil {
		return nil
	}
	return err
}

// NeedLeaderElection is false: every agent serves its own node.
func (s *apiServer) NeedLeaderElection() bool { return false }

// advertise writes addr into the Node's annotation, creating the Node when
// there is none, and retries until it is written or ctx ends.
func (s *apiServer) advertise(ctx context.Context, addr string) {
	node := corev1ac.Node(s.node).WithAnnotations(map[string]string{nodeapi.AddressAnnotation: addr})
	for delay := retryMin; ; delay = min(2*delay, retryMax) {
		_, err := s.nodes.CoreV1().Nodes().Apply(ctx, node, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
		if err == nil {
			s.log.Info("nodeagent: node API address written to the Node", "annotation", nodeapi.AddressAnnotation, "address", addr)
			return
		}
		s.log.Warn("nodeagent: cannot write the node API address to the Node; retrying", "err", err, "in", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
	}
}

// withdraw takes the agent's annotation off the Node (applying the Node
// without it removes the field the agent owns), so that the control plane
// stops sending requests there.
func (s *apiServer) withdraw() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := s.nodes.CoreV1().Nodes().Apply(ctx, corev1ac.Node(s.node), metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
	if err != nil && !apierrors.IsNotFound(err) {
		s.log.Warn("nodeagent: cannot take the node API address off the Node", "err", err)
	}
}

// vmi finds the VMI of the request's path among the node's; a VMI that is
// not there is answered 404, as virt-handler answers it.
func (s *apiServer) vmi(w http.ResponseWriter, r *http.Request) (*v1.VirtualMachineInstance, bool) {
	key := types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
	var vmi v1.VirtualMachineInstance
	err := s.vmis.Get(r.Context(), key, &vmi)
	switch {
	case apierrors.IsNotFound(err):
		http.Error(w, fmt.Sprintf("VMI %s does not exist", key), http.StatusNotFound)
		return nil, false
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return nil, false
	}
	return &vmi, true
}

// stream serves one of the VMI's streams as a WebSocket of binary
// messages (subprotocol plain.kubevirt.io), open opening it.
func (s *apiServer) stream(open func(context.Context, *v1.VirtualMachineInstance) (io.ReadWriteCloser, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		vmi, ok := s.vmi(w, r)
		if !ok {
			return
		}
		srv := &stream.Server{
			Open:   func(ctx context.Context) (io.ReadWriteCloser, error) { return open(ctx, vmi) },
			Logger: s.log.With("vmi", key(vmi), "stream", r.URL.Path),
		}
		srv.ServeHTTP(w, r)
	}
}

// serveVNC serves the VMI's VNC display. A new connection closes the
// VMI's earlier one, or, with preserveSession=true, is refused (503) while
// there is one: virt-handler's rule.
func (s *apiServer) serveVNC(w http.ResponseWriter, r *http.Request) {
	vmi, ok := s.vmi(w, r)
	if !ok {
		return
	}
	preserve, _ := strconv.ParseBool(r.URL.Query().Get(nodeapi.PreserveSessionParam))
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	me := &vncSession{cancel: cancel}
	s.vncMu.Lock()
	if earlier := s.vnc[vmi.UID]; earlier != nil {
		if preserve {
			s.vncMu.Unlock()
			http.Error(w, "Active VNC connection. Request denied.", http.StatusServiceUnavailable)
			return
		}
		earlier.cancel()
	}
	if s.vnc == nil {
		s.vnc = map[types.UID]*vncSession{}
	}
	s.vnc[vmi.UID] = me
	s.vncMu.Unlock()
	defer func() {
		s.vncMu.Lock()
		defer s.vncMu.Unlock()
		if s.vnc[vmi.UID] == me {
			delete(s.vnc, vmi.UID)
		}
	}()
	s.stream(func(ctx context.Context, vmi *v1.VirtualMachineInstance) (io.ReadWriteCloser, error) {
		return s.launcher.VNC(ctx, vmi)
	})(w, r.WithContext(ctx))
}

// action is a launcher call on a VMI and the Event that records it.
type action struct {
	call  func(context.Context, *v1.VirtualMachineInstance) error
	event eventSpec
}

// act serves a PUT of operation op: the launcher's call, an Event on the
// VMI, 202 Accepted; a failure is 500 with the launcher's error, as
// virt-handler answers.
func (s *apiServer) act(op string, a action) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		vmi, ok := s.vmi(w, r)
		if !ok {
			return
		}
		if err := a.call(r.Context(), vmi); err != nil {
			s.log.Warn("nodeagent: "+op+" failed", "vmi", key(vmi), "err", err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		s.log.Info("nodeagent: "+op, "vmi", key(vmi))
		s.events.Event(vmi, a.event.Type, a.event.Reason, a.event.Message)
		w.WriteHeader(http.StatusAccepted)
	}
}

// guestOSInfo answers what the launcher knows of the guest agent's
// information: the guest's operating system (status.guestOSInfo); the
// launcher reads nothing else of it (version, host name, users, file
// systems), so those fields are empty.
func (s *apiServer) guestOSInfo(w http.ResponseWriter, r *http.Request) {
	vmi, ok := s.vmi(w, r)
	if !ok {
		return
	}
	st, err := s.launcher.Status(r.Context(), vmi)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	writeJSON(w, http.StatusOK, v1.VirtualMachineInstanceGuestAgentInfo{OS: st.GuestOSInfo})
}
