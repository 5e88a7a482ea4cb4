package launcher

import (
	"context"
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

// aliasPrefix prefixes the alias of each user-named device.
const aliasPrefix = "ua-"

// snapshot is one reading of a domain.
type snapshot struct {
	obs    domain.Observation
	xml    *libvirtxml.Domain // live definition, nil when undefined
	ifaces []libvirt.DomainInterface
	ipSrc  string // "guest-agent" or "libvirt" when ifaces came from there
	os     *libvirt.DomainGuestInfoOS
}

// observe reads the state of the domain called name: state and reason,
// live XML, and what the guest agent (or libvirt's DHCP leases) know.
// hasGrace is whether the VMI has a termination grace period.
func (l *Launcher) observe(ctx context.Context, name string, hasGrace bool) (snapshot, error) {
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
		state, reason, err := dom.GetState()
		if isNoDomain(err) {
			return nil
		}
		if err != nil {
			return wrapErr(err, "read state of domain %s", name)
		}
		raw, err := dom.GetXMLDesc(0)
		if isNoDomain(err) {
			return nil
		}
		if err != nil {
			return wrapErr(err, "read XML of domain %s", name)
		}
		d, err := domain.Unmarshal([]byte(raw))
		if err != nil {
			return wrapErr(err, "parse XML of domain %s", name)
		}
		s.xml = d
		s.obs = domain.Observation{
			Defined:        true,
			State:          domain.State(state),
			Reason:         domain.Reason(reason),
			ACPI:           d.Features != nil && d.Features.ACPI != nil,
			GracePeriod:    hasGrace,
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
// kept for what did not change.
func buildStatus(s snapshot, prev v1.VirtualMachineInstanceStatus, now time.Time) v1.VirtualMachineInstanceStatus {
	st := v1.VirtualMachineInstanceStatus{}
	st.Phase = domain.Phase(s.obs, prev.Phase)
	switch {
	case domain.IsFinal(prev.Phase):
		st.Reason = prev.Reason // why it ended, as seen then
	case domain.IsFinal(st.Phase):
		st.Reason = domain.EndReason(s.obs)
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
	if s.xml == nil {
		return st
	}
	if os := s.xml.OS; os != nil && os.Type != nil && os.Type.Machine != "" {
		st.Machine = &v1.Machine{Type: os.Type.Machine}
	}
	if s.obs.State.Active() {
		st.Interfaces = interfaceStatuses(s)
	}
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
	if s.xml.Devices == nil {
		return nil
	}
	var out []v1.VirtualMachineInstanceNetworkInterface
	for _, iface := range s.xml.Devices.Interfaces {
		if iface.Alias == nil || !strings.HasPrefix(iface.Alias.Name, aliasPrefix) {
			continue
		}
		st := v1.VirtualMachineInstanceNetworkInterface{
			Name:       strings.TrimPrefix(iface.Alias.Name, aliasPrefix),
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

// prevPhase is the phase the rules start from: the last published one, or
// the VMI's own status phase for a VMI not yet reported.
func (r *record) prevStatus() v1.VirtualMachineInstanceStatus {
	if r.published {
		return r.status
	}
	return v1.VirtualMachineInstanceStatus{Phase: r.vmi.Status.Phase}
}

// key is the VMI's namespace/name (fixed for the record's life).
func (r *record) key() string { return r.nsName }

// event is the record's current status as a Watch event.
func (r *record) event(libvirtEvent time.Time) Event {
	return Event{
		Namespace:    r.vmi.Namespace,
		Name:         r.vmi.Name,
		UID:          r.vmi.UID,
		Status:       *r.status.DeepCopy(),
		Deleted:      r.deleted,
		Observed:     r.observed,
		LibvirtEvent: libvirtEvent,
	}
}

// refreshLocked reads rec's domain, and publishes its status when it
// changed. rec.mu must be held.
func (l *Launcher) refreshLocked(ctx context.Context, rec *record, libvirtEvent time.Time) (v1.VirtualMachineInstanceStatus, error) {
	if rec.deleted {
		return rec.status, nil
	}
	s, err := l.observe(ctx, convert.DomainName(rec.vmi), domain.HasGracePeriod(rec.vmi))
	if err != nil {
		return rec.prevStatus(), err
	}
	if s.obs.Defined && s.obs.State.Active() {
		rec.started = true
	}
	s.obs.Started = rec.started
	rec.agentConnected.Store(s.obs.AgentConnected && s.obs.State.Active())
	now := time.Now()
	st := buildStatus(s, rec.prevStatus(), now)
	if rec.published && sameStatus(rec.status, st) {
		return rec.status, nil
	}
	rec.status, rec.published, rec.observed = st, true, now
	l.broadcast(rec.event(libvirtEvent))
	return st, nil
}

// Status reads the status of vmi's domain: phase by KubeVirt's rules,
// conditions Ready, Paused (with its reason) and AgentConnected, the
// interfaces with their MACs and the addresses the guest agent or libvirt
// knows, the guest OS where the agent answers, and the machine type as
// libvirt expanded it. For a managed VMI (one Sync was called with), a
// change is also delivered to Watch; for another, vmi.Status.Phase is the
// phase the rules start from.
func (l *Launcher) Status(ctx context.Context, vmi *v1.VirtualMachineInstance) (v1.VirtualMachineInstanceStatus, error) {
	if rec := l.lookupRecord(convert.DomainName(vmi)); rec != nil {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return l.refreshLocked(ctx, rec, time.Time{})
	}
	s, err := l.observe(ctx, convert.DomainName(vmi), domain.HasGracePeriod(vmi))
	if err != nil {
		return v1.VirtualMachineInstanceStatus{}, err
	}
	prev := v1.VirtualMachineInstanceStatus{Phase: vmi.Status.Phase}
	s.obs.Started = vmi.Status.Phase == v1.Running || domain.IsFinal(vmi.Status.Phase) || s.obs.State.Active()
	return buildStatus(s, prev, time.Now()), nil
}
