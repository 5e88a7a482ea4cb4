package launcher

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

// agentChannel is the name of the guest agent's virtio channel.
const agentChannel = "org.qemu.guest_agent.0"

// snapshot is one reading of a domain.
type snapshot struct {
	obs    domain.Observation
	cur    currentDomain
	ifaces []libvirt.DomainInterface
	ipSrc  string // "guest-agent" or "libvirt" when ifaces came from there
	os     *libvirt.DomainGuestInfoOS
}

// observe reads the domain called name: state and reason, live XML and
// marks, and what the guest agent (or libvirt's DHCP leases) know.
func (l *Launcher) observe(ctx context.Context, name string) (snapshot, error) {
	var s snapshot
	err := l.read(ctx, func(c *libvirt.Connect) error {
		s = snapshot{}
		dom, err := c.LookupDomainByName(name)
		if isNoDomain(err) {
			return nil
		}
		if err != nil {
			return wrapErr(err, "look up domain %s", name)
		}
		defer dom.Free()
		cur, err := readDomain(dom, name)
		if err != nil || !cur.exists {
			return err
		}
		d := cur.xml
		s.cur = cur
		s.obs = domain.Observation{
			Defined:        true,
			State:          cur.state,
			Reason:         cur.reason,
			ACPI:           d.Features != nil && d.Features.ACPI != nil,
			AgentConnected: agentConnected(d),
		}
		if !s.obs.State.Active() || s.obs.State == domain.StatePaused {
			return nil
		}
		if s.obs.AgentConnected {
			if info, err := dom.GetGuestInfo(libvirt.DOMAIN_GUEST_INFO_OS, 0); err == nil {
				s.os = info.OS
			}
			if ifs, err := dom.ListAllInterfaceAddresses(libvirt.DOMAIN_INTERFACE_ADDRESSES_SRC_AGENT); err == nil {
				s.ifaces, s.ipSrc = ifs, "guest-agent"
			}
		} else if hasNetworkInterface(d) {
			if ifs, err := dom.ListAllInterfaceAddresses(libvirt.DOMAIN_INTERFACE_ADDRESSES_SRC_LEASE); err == nil {
				s.ifaces, s.ipSrc = ifs, "libvirt"
			}
		}
		return nil
	})
	return s, err
}

// judge completes a snapshot's observation from the domain's marks, and
// says how the VMI ended when the marks or libvirt's log know better than
// libvirt's state: starting tells whether this launcher is starting the
// domain right now. It returns the phase the rules start from (prev, or
// what the marks say when nothing was published yet) and, for a VMI that
// has ended in a way the state no longer shows, its final phase and
// reason.
func (l *Launcher) judge(s *snapshot, prev v1.VirtualMachineInstancePhase, starting bool) (from v1.VirtualMachineInstancePhase, end *endedMark) {
	m := s.cur.marks
	if m == nil {
		return prev, nil
	}
	s.obs.GracePeriod = m.VMI.Grace != 0
	if m.Ended != nil {
		return m.Ended.Phase, m.Ended
	}
	started := m.Started
	active := s.obs.State.Active()
	switch {
	case started == nil:
		return prev, nil
	case started.Pending && starting && !active:
		return prev, nil // being started now: not yet
	}
	s.obs.Started = true
	if prev == "" || prev == v1.Pending || prev == v1.Scheduled {
		prev = v1.Running // it has run
	}
	if active || domain.IsFinal(domain.Phase(s.obs, prev)) {
		return prev, nil
	}
	// Shut off, and libvirt no longer says how (libvirtd restarted since):
	// libvirt's log of the domain does.
	if r, ok := l.endFromLog(s.cur.xml.Name, started.At); ok {
		s.obs.State, s.obs.Reason = domain.StateShutoff, r
		if p := domain.Phase(s.obs, prev); domain.IsFinal(p) {
			return prev, nil
		}
	}
	reason := "Unknown"
	if started.Pending {
		reason = "StartInterrupted" // a launcher died while starting it
	}
	return prev, &endedMark{Phase: v1.Failed, Reason: reason}
}

// agentConnected tells whether d's guest agent channel is connected.
func agentConnected(d *libvirtxml.Domain) bool {
	if d.Devices == nil {
		return false
	}
	for _, ch := range d.Devices.Channels {
		if t := ch.Target; t != nil && t.VirtIO != nil && t.VirtIO.Name == agentChannel {
			return t.VirtIO.State == "connected"
		}
	}
	return false
}

// hasNetworkInterface tells whether d has an interface on a libvirt
// network, the only kind libvirt knows DHCP leases of.
func hasNetworkInterface(d *libvirtxml.Domain) bool {
	if d.Devices == nil {
		return false
	}
	for _, iface := range d.Devices.Interfaces {
		if iface.Source != nil && iface.Source.Network != nil {
			return true
		}
	}
	return false
}

// buildStatus turns a snapshot into a VMI status. prev is the status
// reported before: its phase feeds the phase rules, and its timestamps are
// kept for what did not change. end, when set, is how the VMI ended.
func buildStatus(s snapshot, prev v1.VirtualMachineInstanceStatus, from v1.VirtualMachineInstancePhase, end *endedMark, now time.Time) v1.VirtualMachineInstanceStatus {
	st := v1.VirtualMachineInstanceStatus{}
	switch {
	case end != nil:
		st.Phase, st.Reason = end.Phase, end.Reason
	default:
		st.Phase = domain.Phase(s.obs, from)
		if domain.IsFinal(st.Phase) {
			st.Reason = domain.EndReason(s.obs)
		}
	}
	if domain.IsFinal(prev.Phase) {
		st.Phase, st.Reason = prev.Phase, prev.Reason // a final phase is never left
	}
	st.PhaseTransitionTimestamps = append([]v1.VirtualMachineInstancePhaseTransitionTimestamp(nil), prev.PhaseTransitionTimestamps...)
	if st.Phase != prev.Phase {
		st.PhaseTransitionTimestamps = append(st.PhaseTransitionTimestamps, v1.VirtualMachineInstancePhaseTransitionTimestamp{
			Phase: st.Phase, PhaseTransitionTimestamp: metav1.NewTime(now),
		})
	}
	for _, c := range domain.Conditions(s.obs, st.Phase) {
		c.LastTransitionTime = metav1.NewTime(now)
		for _, p := range prev.Conditions {
			if p.Type == c.Type && p.Status == c.Status && p.Reason == c.Reason {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
		st.Conditions = append(st.Conditions, c)
	}
	x := s.cur.xml
	if x == nil {
		return st
	}
	if os := x.OS; os != nil && os.Type != nil && os.Type.Machine != "" {
		st.Machine = &v1.Machine{Type: os.Type.Machine}
	}
	if s.obs.State.Active() {
		st.Interfaces = interfaceStatuses(s)
	}
	st.VolumeStatus = volumeStatuses(s)
	if o := s.os; o != nil {
		st.GuestOSInfo = v1.VirtualMachineInstanceGuestOSInfo{
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
	return st
}

// interfaceStatuses lists the domain's user-named interfaces with their
// MACs, and the addresses the guest agent or libvirt knows, by MAC.
func interfaceStatuses(s snapshot) []v1.VirtualMachineInstanceNetworkInterface {
	if s.cur.xml.Devices == nil {
		return nil
	}
	var out []v1.VirtualMachineInstanceNetworkInterface
	for _, iface := range s.cur.xml.Devices.Interfaces {
		if iface.Alias == nil || !strings.HasPrefix(iface.Alias.Name, convert.UserAliasPrefix) {
			continue
		}
		st := v1.VirtualMachineInstanceNetworkInterface{
			Name:       strings.TrimPrefix(iface.Alias.Name, convert.UserAliasPrefix),
			InfoSource: "domain",
		}
		if iface.MAC != nil {
			st.MAC = iface.MAC.Address
		}
		for _, gi := range s.ifaces {
			if st.MAC == "" || !strings.EqualFold(gi.Hwaddr, st.MAC) {
				continue
			}
			st.InfoSource += ", " + s.ipSrc
			if s.ipSrc == "guest-agent" {
				st.InterfaceName = gi.Name
			}
			for _, a := range gi.Addrs {
				st.IPs = append(st.IPs, a.Addr)
			}
			if len(st.IPs) > 0 {
				st.IP = st.IPs[0]
			}
		}
		out = append(out, st)
	}
	return out
}

// sameStatus compares two statuses, ignoring timestamps.
func sameStatus(a, b v1.VirtualMachineInstanceStatus) bool {
	return reflect.DeepEqual(withoutTimes(a), withoutTimes(b))
}

func withoutTimes(s v1.VirtualMachineInstanceStatus) v1.VirtualMachineInstanceStatus {
	s = *s.DeepCopy()
	s.PhaseTransitionTimestamps = nil
	for i := range s.Conditions {
		s.Conditions[i].LastProbeTime = metav1.Time{}
		s.Conditions[i].LastTransitionTime = metav1.Time{}
	}
	return s
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
	if _, err := l.publish(ctx, st, libvirtEvent, true); err != nil {
		l.log.Debug("status refresh failed", "vmi", st.key(), "err", err)
	}
}

// publish reads st's domain and publishes its status when it changed.
// holdsLock says whether the caller holds st's lock; without it, how the
// VMI ended is recorded only when the lock is free (the next reading
// records it otherwise).
func (l *Launcher) publish(ctx context.Context, st *vmiState, libvirtEvent time.Time, holdsLock bool) (v1.VirtualMachineInstanceStatus, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.deleted {
		return st.status, nil
	}
	s, err := l.observe(ctx, st.name)
	if err != nil {
		return st.status, err
	}
	if m := s.cur.marks; m != nil && m.Owner != l.cfg.Owner {
		return st.status, &ConflictError{Domain: st.name, Owner: m.Owner, Reason: fmt.Sprintf("it belongs to the launcher %q", m.Owner)}
	}
	if m := s.cur.marks; m != nil && m.VMI.UID != "" {
		// The status is that of the VMI the domain runs, whatever UID a
		// caller last passed (a later VMI of the same name, refused).
		st.uid.Store(m.VMI.UID)
	}
	prev := st.status
	if !st.published {
		prev = v1.VirtualMachineInstanceStatus{}
	}
	from, end := l.judge(&s, prev.Phase, st.starting)
	st.agentConnected.Store(s.obs.AgentConnected && s.obs.State.Active())
	now := time.Now()
	status := buildStatus(s, prev, from, end, now)
	if m := s.cur.marks; m != nil && m.Ended == nil && domain.IsFinal(status.Phase) {
		l.recordEnd(ctx, st, &endedMark{Phase: status.Phase, Reason: status.Reason, At: now.UTC().Truncate(time.Second)}, holdsLock)
	}
	if st.published && sameStatus(st.status, status) {
		return st.status, nil
	}
	st.status, st.published, st.observed = status, true, now
	l.broadcast(st.event(libvirtEvent))
	return status, nil
}

// recordEnd writes how the VMI ended into its domain's marks, so that a
// restarted launcher reports the same end even when libvirtd forgot the
// shut-off reason. Without the lock it tries to take it, and gives up when
// another call holds it (the next reading tries again).
func (l *Launcher) recordEnd(ctx context.Context, st *vmiState, end *endedMark, holdsLock bool) {
	if !holdsLock {
		select {
		case st.lock <- struct{}{}:
			defer st.release()
		default:
			return
		}
	}
	err := l.onDomain(ctx, st.name, func(dom *libvirt.Domain) error {
		cur, err := readDomain(dom, st.name)
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
	status, err := l.publish(ctx, st, time.Time{}, false)
	if err != nil {
		return v1.VirtualMachineInstanceStatus{}, err
	}
	if !st.isPublished() {
		return v1.VirtualMachineInstanceStatus{Phase: v1.Pending}, nil
	}
	return status, nil
}
