// Package launcher runs VirtualMachineInstances on a libvirt host: it
// prepares their host artifacts, defines and starts their domains, watches
// libvirt's events and reports each VMI's status. It is the only package of
// the module that talks to libvirt (cgo, libvirt.org/go/libvirt).
//
// One Launcher serves one libvirt URI and is safe for concurrent use:
//
//	l, err := launcher.New(ctx, launcher.Config{Emulate: true}) // qemu:///system
//	if err != nil { ... }
//	defer l.Close()
//	events := l.Watch(ctx)            // every status change of every VMI it manages
//	err = l.Sync(ctx, vmi)            // idempotent: define, start, resume
//	for ev := range events { fmt.Println(ev.Name, ev.Status.Phase) }
//	err = l.Stop(ctx, vmi)            // ACPI, then destroy after the grace period
//	err = l.Delete(ctx, vmi)          // undefine, remove the state folder
//
// Host facts — whether KVM may be used, the OVMF files, whether libvirt
// accepts memory hotplug — are probed from the connection and handed to
// convert.Convert as Options; Config.Emulate forces domain type qemu.
// Where a VMI's files live is Config.Layout (convert.HostLayout: one state
// folder per VMI, containerDisk images and kernel-boot files in an image
// store).
//
// Status follows KubeVirt: the phase comes from libvirt's state and reason
// by the rules of package domain (a domain destroyed after ignoring the
// ACPI power button during its grace period is Failed, a guest that powered
// off Succeeded, a killed QEMU Failed), with the conditions Ready, Paused
// and AgentConnected. Events are hints, state is truth: every libvirt event
// makes the launcher re-read the domain's state, and Watch delivers the
// status when it changed.
//
// libvirt's event loop is registered once per process, before the first
// connection, and runs in one goroutine. The launcher keeps two connections
// (one for the calls that change domains, one for events and status
// reads), with keepalive and a close callback; when they are lost it
// reconnects with backoff, re-registers its callbacks and re-reads every
// managed VMI.
//
// Errors wrap their causes: errors.As finds *libvirt.Error for libvirt's,
// *field.Error for a VMI that api.Validate or convert.Convert refuses
// (Sync's *InvalidError unwraps to each of them).
package launcher
