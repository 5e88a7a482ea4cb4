package launcher

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
	"github.com/vmi2libvirt/vmi2libvirt/internal/hostfiles"
)

// stopPoll is how often Stop looks whether the guest has powered off.
const stopPoll = 100 * time.Millisecond

// stateOf returns the launcher's state of vmi (made when not known yet).
func (l *Launcher) stateOf(vmi *v1.VirtualMachineInstance) *vmiState {
	return l.stateFor(vmi.Namespace, vmi.Name, vmi.UID)
}

// owned runs fn on the domain called name, refusing a domain that is not
// there (ErrNoDomain) or not this launcher's (*ConflictError). A caller
// that changes the domain holds its vmiState's lock.
func (l *Launcher) owned(ctx context.Context, name string, fn func(dom *libvirt.Domain, cur currentDomain) error) error {
	return l.onDomain(ctx, name, func(dom *libvirt.Domain) error {
		cur, err := readDomain(dom, name, true)
		if err != nil {
			return err
		}
		if !cur.exists {
			return fmt.Errorf("%w: domain %s", ErrNoDomain, name)
		}
		if err := l.checkOwned(cur); err != nil {
			return err
		}
		return fn(dom, cur)
	})
}

// onDomain runs fn on the domain called name. A missing domain is
// ErrNoDomain.
func (l *Launcher) onDomain(ctx context.Context, name string, fn func(dom *libvirt.Domain) error) error {
	return l.do(ctx, lookupThen(name, fn))
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

// Kill destroys the VMI's domain at once (the QEMU process is killed).
// With ACPI on and a grace period set, the VMI ends Failed.
func (l *Launcher) Kill(ctx context.Context, vmi *v1.VirtualMachineInstance) error {
	st := l.stateOf(vmi)
	return l.bounded(ctx, st, func(ctx context.Context) error {
		err := l.owned(ctx, st.name, func(dom *libvirt.Domain, _ currentDomain) error {
			return destroy(dom, st.name)
		})
		l.refresh(ctx, st, time.Time{})
		return err
	})
}

// destroy destroys a running domain; one already off is no error.
func destroy(dom *libvirt.Domain, name string) error {
	if err := dom.DestroyFlags(libvirt.DOMAIN_DESTROY_DEFAULT); err != nil && !isNotRunning(err) {
		return wrapErr(err, "destroy domain %s", name)
	}
	return nil
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
	st := l.stateOf(vmi)
	return l.bounded(ctx, st, func(ctx context.Context) error {
		err := l.owned(ctx, st.name, func(dom *libvirt.Domain, _ currentDomain) error {
			return wrapErr(call(dom), "%s domain %s", verb, st.name)
		})
		l.refresh(ctx, st, time.Time{})
		return err
	})
}

// SoftReboot asks the guest to reboot: through the guest agent when it is
// connected, else with the ACPI power button's reboot. A domain with
// neither is refused.
func (l *Launcher) SoftReboot(ctx context.Context, vmi *v1.VirtualMachineInstance) error {
	st := l.stateOf(vmi)
	return l.bounded(ctx, st, func(ctx context.Context) error {
		err := l.owned(ctx, st.name, func(dom *libvirt.Domain, cur currentDomain) error {
			var flags libvirt.DomainRebootFlagValues
			switch {
			case hostplan.AgentConnected(cur.xml):
				flags = libvirt.DOMAIN_REBOOT_GUEST_AGENT
			case cur.xml.Features != nil && cur.xml.Features.ACPI != nil:
				flags = libvirt.DOMAIN_REBOOT_ACPI_POWER_BTN
			default:
				return fmt.Errorf("launcher: soft reboot of %s needs ACPI or a connected guest agent", st.key())
			}
			return wrapErr(dom.Reboot(flags), "reboot domain %s", st.name)
		})
		l.refresh(ctx, st, time.Time{})
		return err
	})
}

// Delete removes the VMI from the host: it destroys a running domain,
// undefines it with its NVRAM, managed save and snapshot metadata, and
// removes the VMI's artifacts and state folder. The VMI is no longer
// owned; Watch delivers a last event with Deleted set. Deleting a VMI
// that has no domain removes its artifacts all the same, so Delete is
// idempotent; a graceful shutdown under way ends with it. Only the VMI's
// namespace and name are used: Delete also removes what List found of a
// VMI that is gone. A domain this launcher does not own is refused
// (*ConflictError) and left alone, with its folder.
//
// Delete and Sync of a VMI take turns: a Sync under way finishes first,
// and a Sync that was called before Delete but had not begun its work
// returns ErrDeleted and makes nothing. Either way nothing of the VMI is
// left when Delete returns.
func (l *Launcher) Delete(ctx context.Context, vmi *v1.VirtualMachineInstance) error {
	st := l.stateOf(vmi)
	l.countDelete(st.name)
	return l.bounded(ctx, st, func(ctx context.Context) error {
		cur, err := l.current(ctx, st.name)
		if err != nil {
			return err
		}
		if cur.exists {
			if err := l.checkOwned(cur); err != nil {
				return err
			}
			if err := l.undefine(ctx, st.name); err != nil {
				return err
			}
		}
		l.forget(st)
		v := vmi.DeepCopy()
		v.Namespace = st.namespace
		if err := hostfiles.RemoveStateFolder(l.cfg.Layout.StateDir, l.cfg.Layout.StateFolder(v)); err != nil {
			return wrapErr(err, "remove artifacts of %s", st.key())
		}
		l.log.Info("VMI deleted", "vmi", st.key())
		return nil
	})
}

// Shutdown asks the VMI's guest to shut down and returns at once: through
// the guest agent when it is connected, else with the ACPI power button,
// as KubeVirt does. Its deadline — now plus
// spec.terminationGracePeriodSeconds — is recorded in the domain, and the
// launcher destroys the domain when it passes with the guest still
// running; a launcher restarted in between keeps the deadline. A VMI
// without grace period, or whose domain has neither ACPI nor a connected
// agent, is destroyed at once. A guest that powers off ends Succeeded; one
// destroyed after ignoring the request ends Failed (KubeVirt's rule).
//
// Shutdown is idempotent: a second call keeps the first deadline. A VMI
// that is not running is left as it is, and Sync no longer starts it.
func (l *Launcher) Shutdown(ctx context.Context, vmi *v1.VirtualMachineInstance) error {
	st := l.stateOf(vmi)
	return l.bounded(ctx, st, func(ctx context.Context) error {
		var deadline time.Time
		err := l.owned(ctx, st.name, func(dom *libvirt.Domain, cur currentDomain) error {
			m := cur.marks
			if m.Shutdown != nil {
				deadline = m.Shutdown.Deadline
				return nil
			}
			now := time.Now().UTC().Truncate(time.Millisecond)
			grace := time.Duration(m.VMI.Grace) * time.Second
			active := cur.state.Active()
			if !active || grace <= 0 || !hostplan.CanShutDown(cur.xml) {
				m.Shutdown = &hostplan.Shutdown{Requested: now, Deadline: now}
				if err := writeMarks(dom, m, active); err != nil {
					return wrapErr(err, "record the shutdown of domain %s", st.name)
				}
				if !active {
					return nil
				}
				l.log.Info("destroying domain: no grace period, or no way to ask the guest", "vmi", st.key())
				return destroy(dom, st.name)
			}
			m.Shutdown = &hostplan.Shutdown{Requested: now, Deadline: now.Add(grace)}
			if err := writeMarks(dom, m, true); err != nil {
				return wrapErr(err, "record the shutdown of domain %s", st.name)
			}
			// libvirt's default: the guest agent when it is connected, else
			// the ACPI power button (as KubeVirt's virt-launcher asks).
			if err := dom.ShutdownFlags(libvirt.DOMAIN_SHUTDOWN_DEFAULT); err != nil && !isNotRunning(err) {
				return wrapErr(err, "shut down domain %s", st.name)
			}
			deadline = m.Shutdown.Deadline
			l.log.Info("guest shutdown requested", "vmi", st.key(), "grace period", grace)
			return nil
		})
		if err == nil && !deadline.IsZero() {
			l.armDeadline(st, deadline)
		}
		l.refresh(ctx, st, time.Time{})
		return err
	})
}

// Stop is Shutdown, then waits until the domain is off — the guest powered
// off, or the launcher destroyed it at the deadline — or ctx ends (the
// shutdown goes on). A domain already off is no error.
func (l *Launcher) Stop(ctx context.Context, vmi *v1.VirtualMachineInstance) error {
	if err := l.Shutdown(ctx, vmi); err != nil {
		return err
	}
	st := l.stateOf(vmi)
	tick := time.NewTicker(stopPoll)
	defer tick.Stop()
	for {
		cur, err := l.current(ctx, st.name)
		if err != nil {
			return err
		}
		if !cur.exists || !cur.state.Active() {
			l.refresh(ctx, st, time.Time{})
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// armDeadline destroys st's domain when a graceful shutdown's deadline
// passes (at once when it has).
func (l *Launcher) armDeadline(st *vmiState, deadline time.Time) {
	st.deadlineTimerMu.Lock()
	defer st.deadlineTimerMu.Unlock()
	if st.deadlineTimer != nil {
		st.deadlineTimer.Stop()
	}
	st.deadlineTimer = time.AfterFunc(max(0, time.Until(deadline)), func() { l.enforceDeadline(st) })
}

// stopDeadline stops st's deadline timer.
func (l *Launcher) stopDeadline(st *vmiState) {
	st.deadlineTimerMu.Lock()
	defer st.deadlineTimerMu.Unlock()
	if st.deadlineTimer != nil {
		st.deadlineTimer.Stop()
		st.deadlineTimer = nil
	}
}

// enforceDeadline destroys st's domain if its graceful shutdown's deadline
// has passed and it still runs.
func (l *Launcher) enforceDeadline(st *vmiState) {
	if l.closed.Load() {
		return
	}
	ctx, cancel := context.WithTimeout(l.ctx, time.Minute)
	defer cancel()
	err := l.bounded(ctx, st, func(ctx context.Context) error {
		err := l.owned(ctx, st.name, func(dom *libvirt.Domain, cur currentDomain) error {
			sd := cur.marks.Shutdown
			if sd == nil || !cur.state.Active() {
				return nil
			}
			if wait := time.Until(sd.Deadline); wait > 0 {
				l.armDeadline(st, sd.Deadline) // a clock step: not yet
				return nil
			}
			l.log.Info("grace period over; destroying domain", "vmi", st.key())
			return destroy(dom, st.name)
		})
		l.refresh(ctx, st, time.Time{})
		return err
	})
	if err != nil && !errors.Is(err, ErrNoDomain) && !errors.Is(err, ErrClosed) {
		l.log.Warn("destroying a domain at its shutdown deadline failed; retrying", "vmi", st.key(), "err", err)
		st.deadlineTimerMu.Lock()
		if !st.isDeleted() {
			st.deadlineTimer = time.AfterFunc(time.Second, func() { l.enforceDeadline(st) })
		}
		st.deadlineTimerMu.Unlock()
	}
}
