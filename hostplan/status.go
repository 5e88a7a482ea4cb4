package hostplan

import (
	"reflect"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

// AgentChannel is the name of the guest agent's virtio channel.
const AgentChannel = "org.qemu.guest_agent.0"

// Snapshot is one reading of a domain: what libvirt said of it, and what
// its guest agent (or libvirt's DHCP leases) knew.
type Snapshot struct {
	// Obs is libvirt's state of the domain; Judge completes it from the
	// marks (GracePeriod, Started).
	Obs domain.Observation
	// Domain is its live definition, Marks the launcher's marks in it (nil
	// for a domain no launcher defined).
	Domain *libvirtxml.Domain
	Marks  *Marks
	// Interfaces are the guest's interfaces as InterfaceSource
	// ("guest-agent" or "libvirt") reports them.
	Interfaces      []GuestInterface
	InterfaceSource string
	// GuestOS is what the guest agent says of the guest's OS, or nil.
	GuestOS *v1.VirtualMachineInstanceGuestOSInfo
}

// GuestInterface is one interface of the guest, by MAC.
type GuestInterface struct {
	Name string // the guest's name for it (eth0), from the guest agent
	MAC  string
	IPs  []string
}

// Observe returns the observation of a domain's live definition in state
// and reason: ACPI and whether its guest agent is connected.
func Observe(d *libvirtxml.Domain, state domain.State, reason domain.Reason) domain.Observation {
	return domain.Observation{
		Defined:        true,
		State:          state,
		Reason:         reason,
		ACPI:           d.Features != nil && d.Features.ACPI != nil,
		AgentConnected: AgentConnected(d),
	}
}

// AgentConnected tells whether d's guest agent channel is connected.
func AgentConnected(d *libvirtxml.Domain) bool {
	if d.Devices == nil {
		return false
	}
	for _, ch := range d.Devices.Channels {
		if t := ch.Target; t != nil && t.VirtIO != nil && t.VirtIO.Name == AgentChannel {
			return t.VirtIO.State == "connected"
		}
	}
	return false
}

// HasNetworkInterface tells whether d has an interface on a libvirt
// network, the only kind libvirt knows DHCP leases of.
func HasNetworkInterface(d *libvirtxml.Domain) bool {
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

// CanShutDown tells whether a domain's guest can be asked to shut down: its
// live definition has ACPI, or its guest agent is connected.
func CanShutDown(d *libvirtxml.Domain) bool {
	return (d.Features != nil && d.Features.ACPI != nil) || AgentConnected(d)
}

// Judge completes a snapshot's observation from the domain's marks, and
// says how the VMI ended when the marks or libvirt's log know better than
// libvirt's state. starting tells whether the caller accounts for a pending
// start: it is starting the domain right now, or lost its call to and has
// not settled it yet; logEnd, called only when libvirt no longer says how a
// domain that ran stopped, reads it from libvirt's log of the domain (the
// last stop at or after since). It returns the phase the rules start from
// (prev, or what the marks say when nothing was published yet) and, for a
// VMI that has ended in a way the state no longer shows, its final phase
// and reason.
func Judge(s *Snapshot, prev v1.VirtualMachineInstancePhase, starting bool, logEnd func(since time.Time) (domain.Reason, bool)) (from v1.VirtualMachineInstancePhase, end *Ended) {
	m := s.Marks
	if m == nil {
		return prev, nil
	}
	s.Obs.GracePeriod = m.VMI.Grace != 0
	if m.Ended != nil {
		return m.Ended.Phase, m.Ended
	}
	started := m.Started
	active := s.Obs.State.Active()
	switch {
	case started == nil:
		return prev, nil
	case started.Pending && starting && !active:
		return prev, nil // being started, or its start not yet settled: not yet
	}
	s.Obs.Started = true
	if prev == "" || prev == v1.Pending || prev == v1.Scheduled {
		prev = v1.Running // it has run
	}
	if active || domain.IsFinal(domain.Phase(s.Obs, prev)) {
		return prev, nil
	}
	// Shut off, and libvirt no longer says how (libvirtd restarted since):
	// libvirt's log of the domain does.
	if logEnd != nil {
		if r, ok := logEnd(started.At); ok {
			s.Obs.State, s.Obs.Reason = domain.StateShutoff, r
			if p := domain.Phase(s.Obs, prev); domain.IsFinal(p) {
				return prev, nil
			}
		}
	}
	reason := "Unknown"
	if started.Pending {
		reason = "StartInterrupted" // a launcher died while starting it
	}
	return prev, &Ended{Phase: v1.Failed, Reason: reason}
}

// Status turns a snapshot into a VMI status. prev is the status reported
// before: its phase feeds the phase rules, and its timestamps are kept for
// what did not change. from and end are Judge's.
func Status(s Snapshot, prev v1.VirtualMachineInstanceStatus, from v1.VirtualMachineInstancePhase, end *Ended, now time.Time) v1.VirtualMachineInstanceStatus {
	st := v1.VirtualMachineInstanceStatus{}
	switch {
	case end != nil:
		st.Phase, st.Reason = end.Phase, end.Reason
	default:
		st.Phase = domain.Phase(s.Obs, from)
		if domain.IsFinal(st.Phase) {
			st.Reason = domain.EndReason(s.Obs)
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
	for _, c := range domain.Conditions(s.Obs, st.Phase) {
		c.LastTransitionTime = metav1.NewTime(now)
		for _, p := range prev.Conditions {
			if p.Type == c.Type && p.Status == c.Status && p.Reason == c.Reason {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
		st.Conditions = append(st.Conditions, c)
	}
	if s.Marks != nil {
		st.MigrationState = s.Marks.Migration.State()
	}
	x := s.Domain
	if x == nil {
		return st
	}
	if os := x.OS; os != nil && os.Type != nil && os.Type.Machine != "" {
		st.Machine = &v1.Machine{Type: os.Type.Machine}
	}
	if s.Obs.State.Active() {
		st.Interfaces = interfaceStatuses(s)
	}
	st.VolumeStatus = volumeStatuses(s)
	liveStatus(s, &st)
	if s.GuestOS != nil {
		st.GuestOSInfo = *s.GuestOS
	}
	return st
}

// interfaceStatuses lists the domain's user-named interfaces with their
// MACs, and the addresses the guest agent or libvirt knows, by MAC.
func interfaceStatuses(s Snapshot) []v1.VirtualMachineInstanceNetworkInterface {
	if s.Domain.Devices == nil {
		return nil
	}
	var out []v1.VirtualMachineInstanceNetworkInterface
	for _, iface := range s.Domain.Devices.Interfaces {
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
		for _, gi := range s.Interfaces {
			if st.MAC == "" || !strings.EqualFold(gi.MAC, st.MAC) {
				continue
			}
			st.InfoSource += ", " + s.InterfaceSource
			if s.InterfaceSource == "guest-agent" {
				st.InterfaceName = gi.Name
			}
			st.IPs = append(st.IPs, gi.IPs...)
			if len(st.IPs) > 0 {
				st.IP = st.IPs[0]
			}
		}
		out = append(out, st)
	}
	return out
}

// volumeStatuses reports the containerDisk volumes of a domain with the
// image digest each runs from: KubeVirt's status.volumeStatus has no field
// for the digest (its containerDiskVolume holds a checksum), so the
// message says "<reference>@<digest>"; Target is the disk's device in the
// guest (vda...).
func volumeStatuses(s Snapshot) []v1.VolumeStatus {
	m := s.Marks
	if m == nil || len(m.Images) == 0 {
		return nil
	}
	var out []v1.VolumeStatus
	for _, u := range m.Images {
		if u.Volume == "" {
			continue
		}
		vs := v1.VolumeStatus{Name: u.Volume, Message: u.Ref + "@" + u.Digest}
		if d := s.Domain.Devices; d != nil {
			for _, disk := range d.Disks {
				if disk.Alias != nil && disk.Alias.Name == convert.UserAliasPrefix+u.Volume && disk.Target != nil {
					vs.Target = disk.Target.Dev
				}
			}
		}
		out = append(out, vs)
	}
	return out
}

// SameStatus compares two statuses, ignoring timestamps.
func SameStatus(a, b v1.VirtualMachineInstanceStatus) bool {
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
