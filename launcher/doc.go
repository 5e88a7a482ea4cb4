// Package launcher runs VirtualMachineInstances on a libvirt host: it
// plans and makes their host artifacts, defines and starts their domains,
// watches libvirt's events and reports each VMI's status. It is the only
// package of the module that talks to libvirt (cgo, libvirt.org/go/libvirt),
// and it is made to be embedded in a controller: every call is short,
// bounded by its context and idempotent, and what it decides from lives in
// libvirt, not in memory.
//
//	l, err := launcher.New(ctx, launcher.Config{Owner: "node01", Emulate: true}) // qemu:///system
//	if err != nil { ... }
//	defer l.Close()
//	events := l.Watch(ctx)            // every status change of every VMI it owns
//	err = l.Sync(ctx, vmi)            // idempotent: artifacts, define, start once, resume
//	for ev := range events { fmt.Println(ev.Name, ev.Status.Phase) }
//	err = l.Shutdown(ctx, vmi)        // ACPI now; destroyed at the grace period's end
//	err = l.Delete(ctx, vmi)          // undefine, remove the state folder
//
// # Gather, plan, apply
//
// Sync is three steps, and only the first and the last touch the host. The
// launcher gathers what a plan needs: the host's facts (KVM, the OVMF
// files, whether libvirt accepts memory hotplug, QEMU's user), probed once
// per connection; the VMI's images, resolved in the image store (pulled
// as their pull policies say); the files of its config sources. Package
// hostplan then computes the plan from them, reading nothing: one run of
// the pipeline (KubeVirt's defaults, validation, conversion) and one
// marshal, the exact domain XML with the launcher's marks in its metadata,
// and every artifact with its contents and mode. The launcher applies it:
// it checks every artifact, then makes them (package internal/hostfiles),
// defines the domain — or leaves a definition from the same converted
// domain alone — and starts it once. A VMI refused while planning leaves
// nothing behind; Plan is the dry run; a VMI that runs as planned costs no
// libvirt write. Config.Emulate forces domain type qemu. Where a VMI's
// files live is Config.Layout (convert.HostLayout: one state folder per
// VMI, images in an image store).
//
// While a domain with the downward metrics channel
// (spec.domain.devices.downwardMetrics) runs, the launcher serves it as
// KubeVirt's virt-handler does: it answers each request of the guest's
// vm-dump-metrics with vhostmd's metrics document (the guest's CPU time,
// vCPUs and memory, the host's CPU and memory figures). Virtiofs
// filesystems need nothing of the launcher at run time: libvirt starts a
// virtiofsd per filesystem on the folder the plan made or checked.
//
// # State that survives restarts
//
// Each domain a launcher defines carries, in its metadata, the VMI it runs
// (namespace, name, UID, grace period), the launcher's owner, whether it
// has been started, a graceful shutdown under way with its deadline, and
// how it ended. A launcher restarted on the same host (New with the same
// Config.Owner) adopts its domains: Watch reports them without a Sync, a
// running guest is not touched, a pending shutdown keeps its deadline, and
// a VMI that ran to its end is never started again — whatever status the
// caller passes, and even when libvirtd forgot how the domain stopped.
// A start is recorded as begun before libvirt is asked, and confirmed
// after: a start a launcher died in, whose domain does not run, is Failed
// ("StartInterrupted"); one whose call this launcher lost with its
// connection is settled by the next Sync — confirmed if the domain runs,
// started again if it never ran.
// List finds every domain the launcher owns, so that those of VMIs gone
// while nobody watched can be deleted. Launchers with different owners
// share one libvirtd without touching each other's domains.
//
// # Status
//
// Status follows KubeVirt: the phase comes from libvirt's state and reason
// by the rules of package domain (a domain destroyed after ignoring the
// ACPI power button during its grace period is Failed, a guest that powered
// off Succeeded, a killed QEMU Failed), with the conditions Ready, Paused
// and AgentConnected. Events are hints, state is truth: every libvirt event
// makes the launcher re-read the domain, and Watch delivers the status when
// it changed.
//
// # Console and VNC
//
// Console and VNC open a running VMI's serial console and VNC display as
// io.ReadWriteClosers bound to a context, what KubeVirt's virtctl console
// and virtctl vnc reach. The console has one attachment at a time,
// host-wide: a second one gets ErrConsoleBusy, unless it is made in the
// same process with ConsoleOptions.Force, which takes the console over as
// virsh console --force does; QEMU keeps writing the serial log meanwhile.
// VNC streams are independent: QEMU's VNC server shares its display among
// them (a client asking for exclusive access disconnects the others). A
// VMI whose spec turned the device off (autoattachSerialConsole or
// autoattachGraphicsDevice false) gets an *InvalidError naming that field.
// Package stream serves either stream to network clients, one stream per
// client, on a listener (a TCP port for VNC viewers) or as a WebSocket
// (noVNC, virtctl):
//
//	srv := &stream.Server{Open: func(ctx context.Context) (io.ReadWriteCloser, error) {
//		return l.VNC(ctx, vmi)
//	}}
//	ln, err := net.Listen("tcp", "127.0.0.1:5900")
//	err = srv.Serve(ctx, ln) // until ctx ends
//
// # Errors
//
// A reconciler acts on four classes, reachable with errors.Is and no cgo
// import: ErrInvalid (permanent: an *InvalidError with every field error of
// the VMI), ErrHostNotReady (retry later: a *HostError naming the VMI's
// field, or a *LibvirtError), ErrUnavailable (transient: libvirt cannot be
// reached), ErrConflict (a *ConflictError: the domain is another's).
// Beside the classes, ErrNoDomain, ErrNotRunning and ErrConsoleBusy say
// that a VMI is not (yet) in the state a call needs.
//
// # Connections
//
// libvirt's event loop is registered once per process, before the first
// connection, and runs in one goroutine. The launcher keeps two connections
// (one for the calls that change domains, one for events and status
// reads), with a close callback; when they are lost it reconnects with
// backoff, re-registers its callbacks and re-reads every VMI it owns. A
// call caught by the loss returns ErrUnavailable; whatever it had done, the
// next Sync or Delete finds it in libvirt and goes on from there. A daemon
// that does not answer for a while (a loaded machine) only makes the calls
// wait: there is no client keepalive unless Config asks for one (see
// Config.KeepAliveInterval for why). TestE2EFrozenLibvirtd freezes a
// daemon inside starts and Deletes, both ways.
package launcher
