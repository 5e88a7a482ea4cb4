package hostplan

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// liveStatus adds to st what live changes make visible, as KubeVirt's
// fields say it: the hot-plugged volumes in status.volumeStatus (phase
// Ready, with hotplugVolume), the vCPU topology the domain runs
// (status.currentCPUTopology) and its memory (status.memory).
func liveStatus(s Snapshot, st *v1.VirtualMachineInstanceStatus) {
	x := s.Domain
	if m := s.Marks; m != nil {
		for _, name := range m.Hotplugged {
			vs := v1.VolumeStatus{Name: name, Phase: v1.VolumeReady, Reason: "VolumeReady",
				Message:       "Successfully attach hotplugged volume " + name + " to VM",
				HotplugVolume: &v1.HotplugVolumeStatus{}}
			if d, ok := disksByName(devicesOf(x))[name]; ok && d.Target != nil {
				vs.Target = d.Target.Dev
			}
			if i := slices.IndexFunc(st.VolumeStatus, func(v v1.VolumeStatus) bool { return v.Name == name }); i >= 0 {
				st.VolumeStatus[i] = vs
			} else {
				st.VolumeStatus = append(st.VolumeStatus, vs)
			}
		}
	}
	if !s.Obs.State.Active() {
		return
	}
	if t := cpuTopology(x); t != nil {
		st.CurrentCPUTopology = t
	}
	if x.Memory != nil {
		boot := resource.NewQuantity(int64(kib(x.Memory.Value, x.Memory.Unit))*1024, resource.BinarySI)
		cur := boot.DeepCopy()
		if mem := virtioMem(x); mem != nil && mem.Target != nil && mem.Target.Requested != nil {
			cur.Add(*resource.NewQuantity(int64(kib(mem.Target.Requested.Value, mem.Target.Requested.Unit))*1024, resource.BinarySI))
		}
		req := cur.DeepCopy()
		st.Memory = &v1.MemoryStatus{GuestAtBoot: boot, GuestCurrent: &cur, GuestRequested: &req}
	}
}

// cpuTopology is the topology of the vCPUs d enables: its cores and
// threads per socket, and as many sockets as the enabled vCPUs fill.
func cpuTopology(d *libvirtxml.Domain) *v1.CPUTopology {
	if d.VCPU == nil || d.CPU == nil || d.CPU.Topology == nil {
		return nil
	}
	t := d.CPU.Topology
	per := uint32(max(t.Cores, 1) * max(t.Threads, 1))
	return &v1.CPUTopology{Sockets: uint32(enabledVCPUs(d)) / per, Cores: uint32(max(t.Cores, 1)), Threads: uint32(max(t.Threads, 1))}
}
