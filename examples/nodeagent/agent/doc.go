// Package agent is vmi2libvirt's node agent: KubeVirt's virt-handler role,
// built on controller-runtime around the library's launcher. Run runs the
// VirtualMachineInstances of one node of a Kubernetes API server on this
// machine's libvirt and writes their status back; command nodeagent
// (examples/nodeagent) is Run behind flags.
//
//	err := agent.Run(ctx, restConfig, agent.Config{Node: "node01", Launcher: launcher.Config{Emulate: true}})
//
// # Which VMIs
//
// A node's VMIs are those labelled kubevirt.io/nodeName=<node>, as
// KubeVirt binds them; the agent's cache holds only those. The node's name
// is the launcher's owner, so agents of different nodes share one libvirtd
// (each with its own state folder) without touching each other's domains.
// With Config.Claim the agent also binds unbound VMIs that may run on its
// node — spec.nodeSelector and the required node affinity matched against
// Config.NodeLabels and kubernetes.io/hostname=<node> — by setting that
// label with the resourceVersion it read as a precondition: of agents
// racing for one VMI the API server lets one through, and the others get
// 409 Conflict and leave it. The unbound VMIs live in a second cache,
// selected by the label's absence.
//
// # Running and status
//
// Each VMI gets the agent's Finalizer, then launcher.Sync; its status is
// written back the way KubeVirt's components write it: KubeVirt's VMI CRD
// has no status subresource, so the agent sends a JSON merge patch of the
// object holding only what changed (status, or the finalizers), with the
// object's resourceVersion as a precondition. The patch never holds spec,
// so a spec change cannot be undone by it; the precondition keeps a status
// computed from a stale copy (the cache lags behind writes) from being
// written — the API server answers 409 and the change that made the copy
// stale brings the VMI back. (An update with retry on conflict would send
// the whole object, spec included, to achieve the same.)
//
// The status holds the phase and its reason, phaseTransitionTimestamps,
// the conditions Ready, Paused and AgentConnected as the launcher reports
// them, Synchronized (False, with KubeVirt's reason and the error as its
// message) while the last sync failed, nodeName, interfaces, guest OS
// info, volumeStatus and the machine type. A phase never goes back and a
// final phase is never left; each phase is recorded once, so an agent
// restarted under a running guest continues the same record. Kubernetes
// Events, from component EventSource on host <node>, mark the domain's
// definition and each phase entered after Scheduled (KubeVirt's Created,
// Started, Stopped), each new sync failure
// (SyncFailed), a graceful shutdown asked (ShuttingDown) and the removal
// (Deleted).
//
// Two controllers share the work. The runner ("vmi", 10 workers as
// virt-handler's) takes the API server's events of the node's VMIs: it
// takes a VMI with its finalizer and the phase Scheduled in one patch,
// calls Sync, Shutdown and Delete, and reports their outcome. The status
// writer ("vmi-status") takes the launcher's Watch channel through
// controller-runtime's source.Channel and writes what
// libvirt reports as it reports it: status follows libvirt's events,
// without polling, and never waits behind a Sync (libvirt says a guest
// runs well before its start call returns). The runner gets libvirt's
// events too for the VMIs leaving the host, whose removal waits on them,
// and skips a Sync that would change nothing: of a VMI it has synced as
// it is now, that runs and is not paused for a reason Sync would mend.
//
// # Errors
//
// A VMI the launcher refuses (launcher.ErrInvalid) becomes Failed once,
// reason Invalid, with every field error and its path in the Synchronized
// condition and one SyncFailed Event; a failed VMI is never synced again.
// A host that is not ready (launcher.ErrHostNotReady) or libvirt or the
// API server out of reach is retried with backoff, 200 ms doubling to 10
// s, the VMI Pending meanwhile. A domain of the same name that another
// owner holds (launcher.ErrConflict) is reported and looked at again every
// minute.
//
// # Deletion and what is left behind
//
// A deleted VMI's guest is asked to shut down (launcher.Shutdown: ACPI,
// destroyed at the end of spec.terminationGracePeriodSeconds); once it is
// off, its final status is written, its domain and state folder removed
// (launcher.Delete) and the finalizer dropped. A VMI that ends on its own
// (Succeeded, Failed) has its domain and state folder removed too, as
// KubeVirt frees a node of an ended VMI; its object stays until deleted.
// When the agent starts, launcher.List finds the domains whose VMI is gone
// (deleted while no agent ran, its finalizer removed by hand): they are
// shut down gracefully, with the grace period their domain recorded, then
// removed. Stopping or killing the agent never touches a guest; a new
// agent of the same node adopts the running ones (same domain, no reboot).
//
// # Metrics and health
//
// One loopback address (Config.HTTPAddress) serves controller-runtime's
// metrics registry at /metrics — its controllers' and API client's
// metrics, with the agent's: kubevirt_vmi_phase_count{node,phase}, the
// node's VMIs by phase, and
// kubevirt_vmi_phase_transition_time_from_creation_seconds{phase}, the
// histogram of the time from a VMI's creation to each phase (Running
// among them), both named and shaped as KubeVirt's, and
// vmi2libvirt_nodeagent_claims_total{result} — and /healthz and /readyz
// (the cache synced, libvirt answering), with one path per check as
// controller-runtime's probe server has. The metrics registry is the
// process's: one agent runs in a process at a time.
//
// # The node API
//
// With Config.APIAddress and Config.APICertDir (command nodeagent's
// -api-address and -api-certs) the agent serves the node API (package
// nodeapi) to the control plane, as virt-handler serves virt-api: the
// serial console and VNC display of this node's running VMIs as
// WebSockets of binary messages (subprotocol plain.kubevirt.io; a new
// console connection takes the console over, a new VNC connection closes
// the VMI's earlier one unless it asks to preserve it), pause, unpause and
// soft reboot (launcher.Pause, Unpause, SoftReboot, each recorded as
// virt-handler's Event: Paused, Unpaused, SoftRebooted) and the guest
// agent's operating system (launcher.Status). A VMI not in the agent's
// cache is 404. Every connection is mutual TLS: the agent's certificate,
// and only the control plane's client certificate accepted. While it
// serves, the agent writes its address to its Node object (the
// nodeapi.AddressAnnotation, by server-side apply, creating the Node when
// there is none, as a kubelet registers its node), and it takes the
// annotation away when it stops: that is how the control plane's
// subresource API (package subresources) finds the agent of a VMI's
// node, what virtctl console, vnc, pause, unpause, soft-reboot and
// guestosinfo reach. The agent then needs the rights to get, create and
// patch its Node.
//
// # Console and VNC on the node
//
// What virtctl console and virtctl vnc give a KubeVirt user through the
// node API, the agent also gives an operator on the node, when
// Config.StreamAddress (command nodeagent's -stream-address) names an IP
// address — 127.0.0.1: each VMI
// running here gets three TCP ports there, chosen by the system: its
// serial console (raw bytes both ways: nc, socat), its VNC display (RFB:
// any VNC viewer) and that display as WebSocket binary messages at any
// path (websocat, noVNC's WebSocket; a browser page only from that same
// host and port or an origin of Config.StreamOrigins, as
// stream.Server checks the Origin of a WebSocket). A controller of its own ("vmi-streams") opens them once the
// launcher reports the VMI Running — paused too, and while it shuts down
// — and closes them, with their clients, when its guest stops, its object
// goes or the agent stops; the next agent opens new ones. Each client gets a stream of its
// own (stream.Server): VNC clients share the display; the console
// takes one client at a time, and a second one is disconnected at once
// (launcher.ErrConsoleBusy, in the agent's log).
//
// The ports are listed as JSON at /consoles of the HTTP address
// (VMIStreams: namespace, name, uid, console, vnc, vncWebSocket), one VMI
// at /consoles/NAMESPACE/NAME (404 while it has none), and logged ("stream
// ports open"). A VMI with spec.domain.devices.autoattachSerialConsole or
// autoattachGraphicsDevice false gets no port for that device; its entry
// holds the launcher's error naming the field instead (consoleError,
// vncError). Nothing is written to the API server: the listing is the
// agent's own, so it cannot outlive the ports, and port numbers, which
// mean something only on this machine, stay off the cluster's objects.
//
// The ports are not authenticated: whoever reaches one reaches the VMI, as
// whoever reaches the agent's HTTP address reads the listing. Keep both on
// loopback, and reach them from elsewhere through ssh -L; an address
// beyond loopback is served when it is configured, with a warning in the
// log.
package agent
