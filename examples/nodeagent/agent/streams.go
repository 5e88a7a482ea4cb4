package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sort"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/stream"
)

// VMIStreams is one running VMI's entry in the agent's /consoles listing:
// the TCP addresses of its serial console and its VNC display, or why it
// has none.
type VMIStreams struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`

	// Console is the host:port of the serial console, raw bytes over TCP
	// (nc, socat); empty when the VMI has none.
	Console string `json:"console,omitempty"`
	// ConsoleError is the launcher's error for a VMI without a serial
	// console (spec.domain.devices.autoattachSerialConsole false).
	ConsoleError string `json:"consoleError,omitempty"`

	// VNC is the host:port of the VNC display, RFB over TCP (any VNC
	// viewer); empty when the VMI has none.
	VNC string `json:"vnc,omitempty"`
	// VNCWebSocket is the host:port where the VNC display is served as
	// WebSocket binary messages, at any path (websocat, noVNC's
	// WebSocket; browser pages of other origins are refused, as
	// stream.Server refuses them).
	VNCWebSocket string `json:"vncWebSocket,omitempty"`
	// VNCError is the launcher's error for a VMI without a VNC display
	// (spec.domain.devices.autoattachGraphicsDevice false).
	VNCError string `json:"vncError,omitempty"`
}

// streamPort is one kind of port a running VMI gets: which device it
// reaches, whether the VMI turned that device off, how a client's stream
// is opened, how the port is served, and where its address or the
// launcher's refusal goes in the VMI's entry.
type streamPort struct {
	name    string
	off     func(*v1.VirtualMachineInstance) bool
	open    func(ctx context.Context, l *launcher.Launcher, vmi *v1.VirtualMachineInstance) (io.ReadWriteCloser, error)
	serve   func(s *stream.Server, ctx context.Context, ln net.Listener) error
	address func(*VMIStreams) *string
	refusal func(*VMIStreams) *string
}

// streamPorts are the ports of each running VMI, in the order they are
// opened. A device the VMI switched off gets no port: its entry holds the
// launcher's error instead, the one a client would get.
var streamPorts = []streamPort{
	{
		name: "console",
		off: func(vmi *v1.VirtualMachineInstance) bool {
			return isFalse(vmi.Spec.Domain.Devices.AutoattachSerialConsole)
		},
		open:    openConsole,
		serve:   (*stream.Server).Serve,
		address: func(e *VMIStreams) *string { return &e.Console },
		refusal: func(e *VMIStreams) *string { return &e.ConsoleError },
	},
	{
		name: "vnc",
		off: func(vmi *v1.VirtualMachineInstance) bool {
			return isFalse(vmi.Spec.Domain.Devices.AutoattachGraphicsDevice)
		},
		open:    openVNC,
		serve:   (*stream.Server).Serve,
		address: func(e *VMIStreams) *string { return &e.VNC },
		refusal: func(e *VMIStreams) *string { return &e.VNCError },
	},
	{
		name: "vnc-websocket",
		off: func(vmi *v1.VirtualMachineInstance) bool {
			return isFalse(vmi.Spec.Domain.Devices.AutoattachGraphicsDevice)
		},
		open:    openVNC,
		serve:   (*stream.Server).ServeWebSocket,
		address: func(e *VMIStreams) *string { return &e.VNCWebSocket },
		refusal: func(e *VMIStreams) *string { return &e.VNCError },
	},
}

// openConsole attaches to the VMI's serial console; one client at a time
// (a second one is disconnected: launcher.ErrConsoleBusy).
func openConsole(ctx context.Context, l *launcher.Launcher, vmi *v1.VirtualMachineInstance) (io.ReadWriteCloser, error) {
	return l.Console(ctx, vmi, launcher.ConsoleOptions{})
}

// openVNC connects to the VMI's VNC display.
func openVNC(ctx context.Context, l *launcher.Launcher, vmi *v1.VirtualMachineInstance) (io.ReadWriteCloser, error) {
	return l.VNC(ctx, vmi)
}

// isFalse tells whether an optional switch is set to false (unset is on,
// as KubeVirt defaults it).
func isFalse(b *bool) bool { return b != nil && !*b }

// errStreamsClosed is what streamServers.open returns once the agent
// stops.
var errStreamsClosed = errors.New("agent: the stream ports are closed: the agent is stopping")

// streamServers holds the stream ports of the node's running VMIs:
// listeners on host, port chosen by the system, each served by a
// stream.Server until the VMI stops running here or the agent
// stops.
type streamServers struct {
	host     string
	origins  []string // web origins allowed on the WebSocket ports
	launcher *launcher.Launcher
	log      *slog.Logger

	mu     sync.Mutex
	vmis   map[types.NamespacedName]*vmiServers
	closed bool
}

// vmiServers are one VMI's ports while they are served.
type vmiServers struct {
	entry  VMIStreams
	cancel context.CancelFunc
	done   sync.WaitGroup // the ports' Serve calls
}

func newStreamServers(host string, origins []string, l *launcher.Launcher, log *slog.Logger) *streamServers {
	return &streamServers{host: host, origins: origins, launcher: l, log: log, vmis: map[types.NamespacedName]*vmiServers{}}
}

// open opens the ports of vmi, unless they are open for it already (ports
// of an earlier VMI of the same name are closed first). Its ports are
// served until close, closeAll, or ctx ends.
func (s *streamServers) open(ctx context.Context, vmi *v1.VirtualMachineInstance) error {
	key := types.NamespacedName{Namespace: vmi.Namespace, Name: vmi.Name}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errStreamsClosed
	}
	if cur := s.vmis[key]; cur != nil {
		if cur.entry.UID == vmi.UID {
			return nil
		}
		s.stop(key, cur)
	}
	// The streams need only the VMI's namespace and name; a copy of its
	// devices decides which it has.
	ref := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: vmi.Namespace, Name: vmi.Name, UID: vmi.UID}}
	ref.Spec.Domain.Devices = *vmi.Spec.Domain.Devices.DeepCopy()

	v := &vmiServers{entry: VMIStreams{Namespace: vmi.Namespace, Name: vmi.Name, UID: vmi.UID}}
	var ports []streamPort
	var listeners []net.Listener
	closeListeners := func() {
		for _, ln := range listeners {
			_ = ln.Close()
		}
	}
	for _, p := range streamPorts {
		if p.off(ref) {
			// The launcher refuses such a VMI's stream, naming the
			// field, once it has read the domain and found no such
			// device: nothing is opened.
			stream, err := p.open(ctx, s.launcher, ref)
			if errors.Is(err, launcher.ErrInvalid) {
				*p.refusal(&v.entry) = err.Error()
				continue
			}
			if err != nil {
				closeListeners()
				return fmt.Errorf("agent: %s of %s: %w", p.name, key, err)
			}
			_ = stream.Close() // it has the device after all: serve it
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(s.host, "0"))
		if err != nil {
			closeListeners()
			return fmt.Errorf("agent: %s port of %s: %w", p.name, key, err)
		}
		ports, listeners = append(ports, p), append(listeners, ln)
		*p.address(&v.entry) = ln.Addr().String()
	}
	ctx, v.cancel = context.WithCancel(ctx)
	for i, p := range ports {
		ln := listeners[i]
		log := s.log.With("vmi", key.String(), "stream", p.name, "address", ln.Addr().String())
		srv := &stream.Server{
			Open: func(ctx context.Context) (io.ReadWriteCloser, error) {
				return p.open(ctx, s.launcher, ref)
			},
			OriginPatterns: s.origins,
			Logger:         log,
		}
		v.done.Add(1)
		go func() {
			defer v.done.Done()
			if err := p.serve(srv, ctx, ln); err != nil {
				log.Warn("nodeagent: stream port failed", "err", err)
			}
		}()
	}
	s.vmis[key] = v
	s.log.Info("nodeagent: stream ports open", "vmi", key.String(), "console", v.entry.Console, "vnc", v.entry.VNC,
		"vncWebSocket", v.entry.VNCWebSocket)
	return nil
}

// close closes the ports of the VMI key, if it has any, and waits until
// their clients are disconnected.
func (s *streamServers) close(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v := s.vmis[key]; v != nil {
		s.stop(key, v)
	}
}

// closeAll closes every port and opens none any more: the agent stops.
func (s *streamServers) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for key, v := range s.vmis {
		s.stop(key, v)
	}
}

// stop ends the ports of v and forgets them; s.mu is held.
func (s *streamServers) stop(key types.NamespacedName, v *vmiServers) {
	v.cancel()
	v.done.Wait()
	delete(s.vmis, key)
	s.log.Info("nodeagent: stream ports closed", "vmi", key.String())
}

// list returns the entries of the VMIs with ports, by namespace and name.
func (s *streamServers) list() []VMIStreams {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]VMIStreams, 0, len(s.vmis))
	for _, v := range s.vmis {
		out = append(out, v.entry)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// get returns the entry of the VMI key, and whether it has one.
func (s *streamServers) get(key types.NamespacedName) (VMIStreams, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.vmis[key]
	if v == nil {
		return VMIStreams{}, false
	}
	return v.entry, true
}
