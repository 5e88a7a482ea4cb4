package launcher

import (
	"maps"
	"reflect"
	"sync/atomic"

	v1 "kubevirt.io/api/core/v1"
)

// The steady state: what makes a Sync of a VMI that runs as its spec says
// cost nothing — no plan, no libvirt call. A Sync that found the domain
// running as planned, and wrote nothing, records the VMI it was given, the
// connection it read the domain on and how many libvirt events of the
// domain had arrived before it read. The next Sync of an equal VMI (spec,
// name, UID, labels and annotations; its status is never read) is done at
// once while nothing can have changed since: the same connection (a
// reconnection may hide changes), and no event of the domain — libvirt
// reports every change of a domain's state, definition or metadata, by
// this launcher or anyone else, as an event. The record is in memory only:
// a new launcher plans again, and decides as before.
//
// A running VMI keeps the volumes it started with, as under KubeVirt: the
// files of its config sources and the tags of its images are read again
// when the VMI or its domain changes, not on every Sync.

// steadyMark is the record of a Sync that left the domain as planned.
type steadyMark struct {
	gen     uint64 // the connection's generation
	events  uint64 // vmiState.events when the domain was read
	deletes uint64 // the Deletes of the VMI begun by then
	vmi     *v1.VirtualMachineInstance
}

// steadyState is what a vmiState keeps of the steady state.
type steadyState struct {
	// events counts the libvirt events of the VMI's domain the launcher
	// has taken from its queue.
	events atomic.Uint64
	steady atomic.Pointer[steadyMark]
}

// steady tells whether a Sync of vmi has nothing to do: st's domain runs
// as the last Sync of an equal VMI left it, and nothing happened since —
// no event of the domain, no reconnection, no Delete begun (deletes is the
// count of them now).
func (l *Launcher) steady(st *vmiState, vmi *v1.VirtualMachineInstance, deletes uint64) bool {
	m := st.steady.Load()
	if m == nil || m.events != st.events.Load() || m.deletes != deletes {
		return false
	}
	l.connMu.RLock()
	current := l.conns.ctl != nil && l.gen == m.gen
	l.connMu.RUnlock()
	return current && sameInputs(m.vmi, vmi)
}

// generation returns the generation of the current connections.
func (l *Launcher) generation() uint64 {
	l.connMu.RLock()
	defer l.connMu.RUnlock()
	return l.gen
}

// markSteady records that the Sync of vmi found st's domain running as
// planned, read on connection gen after events events of the domain and
// deletes Deletes of the VMI.
func (st *vmiState) markSteady(vmi *v1.VirtualMachineInstance, gen, events, deletes uint64) {
	if m := st.steady.Load(); m != nil && m.gen == gen && m.events == events && m.deletes == deletes && sameInputs(m.vmi, vmi) {
		return
	}
	keep := &v1.VirtualMachineInstance{ObjectMeta: *vmi.ObjectMeta.DeepCopy(), Spec: *vmi.Spec.DeepCopy()}
	st.steady.Store(&steadyMark{gen: gen, events: events, deletes: deletes, vmi: keep})
}

// sameInputs tells whether two VMIs are the same input to a plan: equal
// specs, names, UIDs, labels and annotations (the downward API reads
// them), whatever their status and other metadata.
func sameInputs(a, b *v1.VirtualMachineInstance) bool {
	return a.Name == b.Name && a.Namespace == b.Namespace && a.UID == b.UID &&
		maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations) &&
		reflect.DeepEqual(&a.Spec, &b.Spec)
}
