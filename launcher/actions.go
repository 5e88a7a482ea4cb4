package launcher

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

// stopPoll is how often Stop looks whether the guest has powered off.
const stopPoll = 100 * time.Millisecond

// managed returns the record of vmi's domain (nil when not managed) and the
// VMI to act on: the defaulted copy Sync kept, or a defaulted copy of vmi.
func (l *Launcher) managed(vmi *v1.VirtualMachineInstance) (*record, *v1.VirtualMachineInstance) {
	rec := l.lookupRecord(convert.DomainName(vmi))
	if rec != nil {
		rec.mu.Lock()
		v := rec.vmi
		rec.mu.Unlock()
		return rec, v
	}
	v := vmi.DeepCopy()
	api.Default(v, l.cfg.Cluster)
	return nil, v
}

// refreshAfter publishes the status of a managed VMI after an action.
func (l *Launcher) refreshAfter(ctx context.Context, rec *record) {
	if rec == nil {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if _, err := l.refreshLocked(ctx, rec, time.Time{}); err != nil {
		l.log.Debug("status refresh failed", "vmi", rec.key(), "err", err)
	}
}

// onDomain runs fn on the domain called name. A missing domain is
// ErrNoDomain.
func (l *Launcher) onDomain(ctx context.Context, name string, fn func(dom *libvirt.Domain) error) error {
	return l.do(ctx, lookupThen(name, fn))
}

// readDomain is onDomain on the monitoring connection, for reads.
func (l *Launcher) readDomain(ctx context.Context, name string, fn func(dom *libvirt.Domain) error) error {
	return l.read(ctx, lookupThen(name, fn))
}

// lookupThen looks the domain called name up and runs fn on it.
func lookupThen(name string, fn func(dom *libvirt.Domain) error) func(c *libvirt.Connect) error {
	return func(c *libvirt.Connect) error {
		dom, err := c.LookupDomainByName(name)
		if isNoDomain(err) {
			return fmt.Errorf("%w: domain %s", ErrNoDomain, name)
		}
		if err != nil {
			return wrapErr(err, "look up domain %s", name)
		}
		defer dom.Free()
		return fn(dom)
	}
}

// gracePeriod returns the VMI's termination grace period
// (spec.terminationGracePeriodSeconds, KubeVirt's default when unset).
func gracePeriod(v *v1.VirtualMachineInstance) time.Duration {
	if t := v.Spec.TerminationGracePeriodSeconds; t != nil {
		return time.Duration(*t) * time.Second
	}
	return time.Duration(v1.DefaultGracePeriodSeconds) * time.Second
}

// Stop shuts the VMI down gracefully: when the VMI has a grace period and
// its domain has ACPI (or a connected guest agent), Stop asks the guest to
// shut down — through the agent when it is connected, else with the ACPI
// power button, as KubeVirt does — and waits up to
// spec.terminationGracePeriodSeconds for it to power off, then destroys the
// domain; otherwise it destroys it at once. A guest that
// powers off ends Succeeded; one destroyed after ignoring the button ends
// Failed (KubeVirt's rule). Stop returns when the domain is off; a domain
// already off is no error. If ctx ends first, Stop returns its error and
// the guest keeps shutting down.
func (l *Launcher) Stop(ctx context.Context, vmi *v1.VirtualMachineInstance) error {
	rec, v := l.managed(vmi)
	if rec != nil {
		rec.syncMu.Lock()
		defer rec.syncMu.Unlock()
	}
	name := convert.DomainName(v)
	grace := gracePeriod(v)
	acpiAsked := false
	err := l.onDomain(ctx, name, func(dom *libvirt.Domain) error {
		state, _, err := dom.GetState()
		if err != nil {
			return wrapErr(err, "read state of domain %s", name)
		}
		if !domain.State(state).Active() {
			return nil
		}
		if grace <= 0 || !canShutDown(dom) {
			return nil
		}
		// libvirt's default: the guest agent when it is connected, else
		// the ACPI power button (as KubeVirt's virt-launcher asks).
		if err := dom.ShutdownFlags(libvirt.DOMAIN_SHUTDOWN_DEFAULT); err != nil {
			if !isNotRunning(err) {
				return wrapErr(err, "shut down domain %s", name)
			}
			return nil
		}
		acpiAsked = true
		return nil
	})
	if err != nil {
		return err
	}
	if acpiAsked {
		l.log.Info("guest shutdown requested", "vmi", v.Namespace+"/"+v.Name, "grace period", grace)
		deadline := time.NewTimer(grace)
		defer deadline.Stop()
		tick := time.NewTicker(stopPoll)
		defer tick.Stop()
	wait:
		for {
			active, err := l.active(ctx, name)
			if err != nil {
				return err
			}
			if !active {
				l.refreshAfter(ctx, rec)
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-deadline.C:
				break wait
			case <-tick.C:
			}
		}
		l.log.Info("grace period over; destroying domain", "vmi", v.Namespace+"/"+v.Name)
	}
	err = l.destroy(ctx, name)
	l.refreshAfter(ctx, rec)
	return err
}

// Kill destroys the VMI's domain at once (the QEMU process is killed).
// With ACPI on and a grace period set, the VMI ends Failed.
func (l *Launcher) Kill(ctx context.Context, vmi *v1.VirtualMachineInstance) error {
	rec, v := l.managed(vmi)
	err := l.destroy(ctx, convert.DomainName(v))
	l.refreshAfter(ctx, rec)
	return err
}

// destroy destroys a running domain; one already off is no error.
func (l *Launcher) destroy(ctx context.Context, name string) error {
	return l.onDomain(ctx, name, func(dom *libvirt.Domain) error {
		if err := dom.DestroyFlags(libvirt.DOMAIN_DESTROY_DEFAULT); err != nil && !isNotRunning(err) {
			return wrapErr(err, "destroy domain %s", name)
		}
		return nil
	})
}

// active tells whether the domain called name has a QEMU process.
func (l *Launcher) active(ctx context.Context, name string) (bool, error) {
	var active bool
	err := l.readDomain(ctx, name, func(dom *libvirt.Domain) error {
		state, _, err := dom.GetState()
		if err != nil {
			return wrapErr(err, "read state of domain %s", name)
		}
		active = domain.State(state).Active()
		return nil
	})
	if errors.Is(err, ErrNoDomain) {
		return false, nil
	}
	return active, err
}

// canShutDown tells whether dom's guest can be asked to shut down: its
// live definition has ACPI, or its guest agent is connected.
func canShutDown(dom *libvirt.Domain) bool {
	raw, err := dom.GetXMLDesc(0)
	if err != nil {
		return false
	}
	d, err := domain.Unmarshal([]byte(raw))
	return err == nil && ((d.Features != nil && d.Features.ACPI != nil) || agentConnected(d))
}

// isNotRunning tells whether err is libvirt saying the domain is not
// running.
func isNotRunning(err error) bool {
	return libvirtCode(err) == libvirt.ERR_OPERATION_INVALID
}

// Pause pauses the VMI's domain; it is reported with the Paused condition,
// reason PausedByUser, and Sync leaves it paused.
func (l *Launcher) Pause(ctx context.Context, vmi *v1.VirtualMachineInstance) error {
	return l.act(ctx, vmi, "pause", (*libvirt.Domain).Suspend)
}

// Unpause resumes the VMI's paused domain.
func (l *Launcher) Unpause(ctx context.Context, vmi *v1.VirtualMachineInstance) error {
	return l.act(ctx, vmi, "unpause", (*libvirt.Domain).Resume)
}

// act runs one libvirt call on the VMI's domain (verb names it in an
// error) and publishes the VMI's status after it.
func (l *Launcher) act(ctx context.Context, vmi *v1.VirtualMachineInstance, verb string, call func(*libvirt.Domain) error) error {
	rec, v := l.managed(vmi)
	name := convert.DomainName(v)
	err := l.onDomain(ctx, name, func(dom *libvirt.Domain) error {
		return wrapErr(call(dom), "%s domain %s", verb, name)
	})
	l.refreshAfter(ctx, rec)
	return err
}

// SoftReboot asks the guest to reboot: through the guest agent when it is
// connected, else with the ACPI power button's reboot. A domain with
// neither is refused.
func (l *Launcher) SoftReboot(ctx context.Context, vmi *v1.VirtualMachineInstance) error {
	rec, v := l.managed(vmi)
	name := convert.DomainName(v)
	err := l.onDomain(ctx, name, func(dom *libvirt.Domain) error {
		raw, err := dom.GetXMLDesc(0)
		if err != nil {
			return wrapErr(err, "read XML of domain %s", name)
		}
		d, err := domain.Unmarshal([]byte(raw))
		if err != nil {
			return wrapErr(err, "parse XML of domain %s", name)
		}
		var flags libvirt.DomainRebootFlagValues
		switch {
		case agentConnected(d):
			flags = libvirt.DOMAIN_REBOOT_GUEST_AGENT
		case d.Features != nil && d.Features.ACPI != nil:
			flags = libvirt.DOMAIN_REBOOT_ACPI_POWER_BTN
		default:
			return fmt.Errorf("launcher: soft reboot of %s/%s needs ACPI or a connected guest agent", v.Namespace, v.Name)
		}
		return wrapErr(dom.Reboot(flags), "reboot domain %s", name)
	})
	l.refreshAfter(ctx, rec)
	return err
}

// Delete removes the VMI from the host: it destroys a running domain,
// undefines it with its NVRAM, managed save and snapshot metadata, and
// removes the VMI's artifacts and state folder. The VMI is no longer
// managed; Watch delivers a last event with Deleted set. Deleting a VMI
// that has no domain removes its artifacts all the same.
//
// Delete and Sync of a VMI take turns: a Sync under way finishes first,
// and a Sync that was called before Delete but had not begun its work
// returns ErrDeleted and makes nothing. Either way nothing of the VMI is
// left when Delete returns.
func (l *Launcher) Delete(ctx context.Context, vmi *v1.VirtualMachineInstance) error {
	rec, v := l.managed(vmi)
	name := convert.DomainName(v)
	l.countDelete(name)
	if rec != nil {
		rec.syncMu.Lock()
	} else {
		// Not managed (yet): take the record a Sync starting now would
		// use, so the two take turns.
		rec = l.lockRecord(v)
	}
	defer rec.syncMu.Unlock()
	err := l.onDomain(ctx, name, func(dom *libvirt.Domain) error {
		if err := dom.DestroyFlags(libvirt.DOMAIN_DESTROY_DEFAULT); err != nil && !isNotRunning(err) && !isNoDomain(err) {
			return wrapErr(err, "destroy domain %s", name)
		}
		flags := libvirt.DOMAIN_UNDEFINE_NVRAM | libvirt.DOMAIN_UNDEFINE_MANAGED_SAVE |
			libvirt.DOMAIN_UNDEFINE_SNAPSHOTS_METADATA | libvirt.DOMAIN_UNDEFINE_CHECKPOINTS_METADATA
		if err := dom.UndefineFlags(flags); err != nil && !isNoDomain(err) {
			return wrapErr(err, "undefine domain %s", name)
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrNoDomain) {
		return err
	}
	l.forget(rec)
	if err := removeArtifacts(v, l.cfg.Layout); err != nil {
		return wrapErr(err, "remove artifacts of %s/%s", v.Namespace, v.Name)
	}
	l.log.Info("VMI deleted", "vmi", v.Namespace+"/"+v.Name)
	return nil
}
