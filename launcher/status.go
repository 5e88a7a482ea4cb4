package launcher

import (
	"context"
	"fmt"
	"time"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
)

// observe reads the domain called name: state and reason, live XML and
// marks, and what the guest agent (or libvirt's DHCP leases) know.
func (l *Launcher) observe(ctx context.Context, name string) (hostplan.Snapshot, error) {
	l.readings.Add(1)
	var s hostplan.Snapshot
	err := l.read(ctx, func(c *libvirt.Connect) error {
		s = hostplan.Snapshot{}
		dom, err := c.LookupDomainByName(name)
		if isNoDomain(err) {
			return nil
		}
		if err != nil {
			return wrapErr(err, "look up domain %s", name)
		}
		defer dom.Free()
		cur, err := readDomain(dom, name, true)
		if err != nil || !cur.exists {
			return err
		}
		d := cur.xml
		s.Domain, s.Marks = d, cur.marks
		s.Obs = hostplan.Observe(d, cur.state, cur.reason)
		guestFacts(dom, &s)
		return nil
	})
	return s, err
}

// observeAgain is observe of the domain called name when libvirt's events
// prove that its state, live XML and marks are still those of last, the
// snapshot of its last reading: they are taken from last, and only what
// no event announces is read again, the guest agent's facts (or the
// leases' addresses) of a guest that runs. A paused or shut-off domain
// costs no libvirt call.
func (l *Launcher) observeAgain(ctx context.Context, name string, last hostplan.Snapshot) (hostplan.Snapshot, error) {
	s := hostplan.Snapshot{Obs: last.Obs, Domain: last.Domain, Marks: last.Marks}
	if !hasGuestFacts(s) {
		return s, nil
	}
	err := l.read(ctx, func(c *libvirt.Connect) error {
		s.Interfaces, s.InterfaceSource, s.GuestOS = nil, "", nil
		dom, err := c.LookupDomainByName(name)
		if isNoDomain(err) {
			return nil // gone: its event follows, and the next reading says so
		}
		if err != nil {
			return wrapErr(err, "look up domain %s", name)
		}
		defer dom.Free()
		guestFacts(dom, &s)
		return nil
	})
	return s, err
}

// connAlive tells whether the launcher's connections are up (no libvirt
// call: the client's own view, which its event loop keeps). A last reading
// is proven current only then: while libvirtd is away no event would say
// what changed, and Status fails as a reading would.
func (l *Launcher) connAlive() bool {
	l.connMu.RLock()
	defer l.connMu.RUnlock()
	for _, c := range []*libvirt.Connect{l.conns.ctl, l.conns.mon} {
		if c == nil {
			return false
		}
		if alive, err := c.IsAlive(); err != nil || !alive {
			return false
		}
	}
	return true
}

// hasGuestFacts tells whether the domain of s has facts to read beyond its
// state and XML: a guest that runs (not paused) with a guest agent
// connected, or with a network interface whose addresses libvirt's leases
// may know.
func hasGuestFacts(s hostplan.Snapshot) bool {
	if !s.Obs.State.Active() || s.Obs.State == domain.StatePaused {
		return false
	}
	return s.Obs.AgentConnected || hostplan.HasNetworkInterface(s.Domain)
}

// guestFacts reads into s what the guest agent, or libvirt's DHCP leases,
// know of the running guest of dom (s's domain).
func guestFacts(dom *libvirt.Domain, s *hostplan.Snapshot) {
	if !hasGuestFacts(*s) {
		return
	}
	if s.Obs.AgentConnected {
		if info, err := dom.GetGuestInfo(libvirt.DOMAIN_GUEST_INFO_OS, 0); err == nil && info.OS != nil {
			s.GuestOS = guestOS(info.OS)
		}
		if ifs, err := dom.ListAllInterfaceAddresses(libvirt.DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT); err == nil {
			s.Interfaces, s.InterfaceSource = guestInterfaces(ifs), "guest-agent"
		}
		return
	}
	if ifs, err := dom.ListAllInterfaceAddresses(libvirt.DOMAIN_INTERFACE_ADDRESSES_SRC_LEASE); err == nil {
		s.Interfaces, s.InterfaceSource = guestInterfaces(ifs), "libvirt"
	}
}

// guestOS is what libvirt's guest agent says of the guest's OS, as KubeVirt
// reports it.
func guestOS(o *libvirt.DomainGuestInfoOS) *v1.VirtualMachineInstanceGuestOSInfo {
	return &v1.VirtualMachineInstanceGuestOSInfo{
		Name:          o.Name,
		KernelRelease: o.KernelRelease,
		Version:       o.Version,
		PrettyName:    o.PrettyName,
		VersionID:     o.VersionID,
		KernelVersion: o.KernelVersion,
		Machine:       o.Machine,
		ID:            o.ID,
	}
}

// guestInterfaces are libvirt's interface addresses as the plan reads them.
func guestInterfaces(ifs []libvirt.DomainInterface) []hostplan.GuestInterface {
	out := make([]hostplan.GuestInterface, len(ifs))
	for i, gi := range ifs {
		out[i] = hostplan.GuestInterface{Name: gi.Name, MAC: gi.Hwaddr}
		for _, a := range gi.Addrs {
			out[i].IPs = append(out[i].IPs, a.Addr)
		}
	}
	return out
}

// event is st's current status as a Watch event. st.mu must be held.
func (st *vmiState) event(libvirtEvent time.Time) Event {
	return Event{
		Namespace:    st.namespace,
		Name:         st.vmi,
		UID:          st.uid.Load(),
		Status:       *st.status.DeepCopy(),
		Deleted:      st.deleted,
		Observed:     st.observed,
		LibvirtEvent: libvirtEvent,
	}
}

// refresh reads st's domain and publishes its status when it changed. It
// is called with st's lock held (the calls that change the VMI), and
// records how the VMI ended in its marks the first time it sees it. A
// failure is logged: the next event or call reads again.
func (l *Launcher) refresh(ctx context.Context, st *vmiState, libvirtEvent time.Time) {
	if _, err := l.publish(ctx, st, libvirtEvent, true, false); err != nil {
		l.log.Debug("status refresh failed", "vmi", st.key(), "err", err)
	}
}

// publish reads st's domain and publishes its status when it changed.
// holdsLock says whether the caller holds st's lock; without it, how the
// VMI ended is recorded only when the lock is free (the next reading
// records it otherwise). reuse lets it take the domain's state, XML and
// marks from the last reading when libvirt's events prove them current
// (the same connection, no event of the domain since: observeAgain); a
// caller that may have changed the domain itself (refresh) reads it all.
//
// An incoming migration's domain that goes or shuts off before the guest
// arrived (the migration failed; libvirt destroyed it) is no end of the
// VMI: the launcher forgets the VMI (Watch reports it deleted) rather than
// publish a final phase, which would stick to the VMI once it does arrive.
func (l *Launcher) publish(ctx context.Context, st *vmiState, libvirtEvent time.Time, holdsLock, reuse bool) (v1.VirtualMachineInstanceStatus, error) {
	status, neverArrived, err := l.publishLocked(ctx, st, libvirtEvent, holdsLock, reuse)
	if neverArrived {
		l.log.Info("an incoming migration did not arrive: the VMI is not this host's", "vmi", st.key())
		l.forget(st)
		return v1.VirtualMachineInstanceStatus{Phase: v1.Pending}, nil
	}
	return status, err
}

func (l *Launcher) publishLocked(ctx context.Context, st *vmiState, libvirtEvent time.Time, holdsLock, reuse bool) (v1.VirtualMachineInstanceStatus, bool, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.deleted {
		return st.status, false, nil
	}
	events, gen := st.events.Load(), l.generation()
	var s hostplan.Snapshot
	var err error
	if reuse && st.published && st.last.Domain != nil && st.readGen == gen && st.readEvents == events && l.connAlive() {
		s, err = l.observeAgain(ctx, st.name, st.last)
	} else {
		s, err = l.observe(ctx, st.name)
	}
	if err != nil {
		return st.status, false, err
	}
	st.readEvents, st.readGen = events, gen
	st.last = hostplan.Snapshot{Obs: s.Obs, Domain: s.Domain, Marks: s.Marks} // before Judge completes s
	switch wasIncoming := st.incoming; {
	case hostplan.Incoming(s):
		st.incoming = true
	case wasIncoming && !(s.Obs.Defined && s.Obs.State.Active()):
		st.incoming = false
		return st.status, true, nil
	default:
		st.incoming = false
	}
	if m := s.Marks; m != nil && m.Owner != l.cfg.Owner {
		return st.status, false, &ConflictError{Domain: st.name, Owner: m.Owner, Reason: fmt.Sprintf("it belongs to the launcher %q", m.Owner)}
	}
	if m := s.Marks; m != nil && m.VMI.UID != "" {
		// The status is that of the VMI the domain runs, whatever UID a
		// caller last passed (a later VMI of the same name, refused).
		st.uid.Store(m.VMI.UID)
	}
	if hostplan.MigratedAway(s) {
		return st.status, false, nil // it runs on the migration's target (migrate.go)
	}
	prev := st.status
	if !st.published {
		prev = v1.VirtualMachineInstanceStatus{}
	}
	from, end := hostplan.Judge(&s, prev.Phase, st.startPending(), func(since time.Time) (domain.Reason, bool) {
		return l.endFromLog(st.name, since)
	})
	st.agentConnected.Store(s.Obs.AgentConnected && s.Obs.State.Active())
	now := time.Now()
	status := hostplan.Status(s, prev, from, end, now)
	if m := s.Marks; m != nil && m.Ended == nil && domain.IsFinal(status.Phase) {
		l.recordEnd(ctx, st, &hostplan.Ended{Phase: status.Phase, Reason: status.Reason, At: now.UTC().Truncate(time.Second)}, holdsLock)
	}
	if st.published && hostplan.SameStatus(st.status, status) {
		return st.status, false, nil
	}
	st.status, st.published, st.observed = status, true, now
	l.broadcast(st.event(libvirtEvent))
	return status, false, nil
}

// recordEnd writes how the VMI ended into its domain's marks, so that a
// restarted launcher reports the same end even when libvirtd forgot the
// shut-off reason. Without the lock it tries to take it, and gives up when
// another call holds it (the next reading tries again).
func (l *Launcher) recordEnd(ctx context.Context, st *vmiState, end *hostplan.Ended, holdsLock bool) {
	if !holdsLock {
		select {
		case st.lock <- struct{}{}:
			defer st.release()
		default:
			return
		}
	}
	err := l.onDomain(ctx, st.name, func(dom *libvirt.Domain) error {
		cur, err := readDomain(dom, st.name, false)
		if err != nil || !cur.exists || cur.marks == nil || cur.marks.Owner != l.cfg.Owner || cur.marks.Ended != nil {
			return err
		}
		cur.marks.Ended = end
		return writeMarks(dom, cur.marks, cur.state.Active())
	})
	if err != nil {
		l.log.Debug("recording how a VMI ended failed", "vmi", st.key(), "err", err)
	}
}

// Status reads the status of vmi's domain: phase by KubeVirt's rules,
// conditions Ready, Paused (with its reason) and AgentConnected, the
// interfaces with their MACs and the addresses the guest agent or libvirt
// knows, the guest OS where the agent answers, and the machine type as
// libvirt expanded it. The phase follows what the domain recorded of its
// run, whatever vmi.Status says. A change is also delivered to Watch. A
// domain this launcher does not own is a *ConflictError; a VMI without a
// domain is Pending.
func (l *Launcher) Status(ctx context.Context, vmi *v1.VirtualMachineInstance) (v1.VirtualMachineInstanceStatus, error) {
	st := l.stateOf(vmi)
	status, err := l.publish(ctx, st, time.Time{}, false, true)
	if err != nil {
		return v1.VirtualMachineInstanceStatus{}, err
	}
	if !st.isPublished() {
		return v1.VirtualMachineInstanceStatus{Phase: v1.Pending}, nil
	}
	return status, nil
}
