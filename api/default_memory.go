package api

import (
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/internal/quantity"
)

// Memory hotplug constraints of KubeVirt (pkg/liveupdate/memory).
const (
	// hotplugBlock is the virtio-mem block size guest memory and maxGuest
	// must be multiples of (2Mi; 1Gi with 1Gi hugepages).
	hotplugBlock     int64 = 2 << 20
	hotplugBlock1Gi  int64 = 1 << 30
	hotplugMinMemory int64 = 1 << 30 // guest memory needed for hotplug
)

// defaultGuestMemory sets memory.guest, when unset, from the memory
// request, else the memory limit, else the hugepage size; a request or limit
// that is negative or above MaxGuestMemory is not copied.
func defaultGuestMemory(vmi *v1.VirtualMachineInstance, _ ClusterConfig) {
	d := &vmi.Spec.Domain
	if d.Memory != nil && d.Memory.Guest != nil {
		return
	}
	if d.Memory == nil {
		d.Memory = &v1.Memory{}
	}
	// A negative or absurd request or limit (which Validate refuses on its
	// own path) is not copied into a field the user never wrote.
	usable := func(q resource.Quantity) bool { return q.Sign() > 0 && q.CmpInt64(MaxGuestMemory) <= 0 }
	if q, ok := d.Resources.Requests[k8sv1.ResourceMemory]; ok && !q.IsZero() {
		if usable(q) {
			d.Memory.Guest = &q
		}
	} else if q, ok := d.Resources.Limits[k8sv1.ResourceMemory]; ok && !q.IsZero() {
		if usable(q) {
			d.Memory.Guest = &q
		}
	} else if d.Memory.Hugepages != nil {
		if q, err := quantity.Parse(d.Memory.Hugepages.PageSize); err == nil {
			d.Memory.Guest = &q
		}
	}
}

// defaultMemoryStatus records the guest memory the VMI boots with in
// status.memory, as KubeVirt does.
func defaultMemoryStatus(vmi *v1.VirtualMachineInstance, _ ClusterConfig) {
	m := vmi.Spec.Domain.Memory
	if m == nil || m.Guest == nil {
		return
	}
	vmi.Status.Memory = &v1.MemoryStatus{
		GuestAtBoot:    m.Guest,
		GuestCurrent:   m.Guest,
		GuestRequested: m.Guest,
	}
}

// defaultMemoryHotplug sets memory.maxGuest under the LiveUpdate rollout
// strategy: the cluster's maxGuest, else guest memory times the hotplug
// ratio, at most MaxGuestMemory — only when the VMI can hotplug memory at all (see
// memoryHotplugPossible); otherwise it stays unset.
func defaultMemoryHotplug(vmi *v1.VirtualMachineInstance, cfg ClusterConfig) {
	m := vmi.Spec.Domain.Memory
	if !cfg.liveUpdate() || m == nil || m.MaxGuest != nil {
		return
	}
	var maxGuest *resource.Quantity
	switch {
	case cfg.MaxGuest != nil:
		q := cfg.MaxGuest.DeepCopy()
		maxGuest = &q
	case m.Guest != nil:
		g := m.Guest.Value()
		ratio := int64(cfg.hotplugRatio())
		if g > 0 && g > (1<<62)/ratio {
			return // would overflow: no hotplug for such a VMI
		}
		// Capped at this library's limit, so that a valid VMI is not
		// refused for a maximum it never asked for.
		maxGuest = resource.NewQuantity(min(g*ratio, MaxGuestMemory), resource.BinarySI)
	}
	if !memoryHotplugPossible(&vmi.Spec, maxGuest) {
		return
	}
	m.MaxGuest = maxGuest
}

// memoryHotplugPossible applies KubeVirt's conditions for memory hotplug:
// not realtime, no guest mapping passthrough, no launch security, guest
// memory and maxGuest set, guest <= maxGuest, both aligned to the hotplug
// block, amd64, and at least 1Gi of guest memory.
func memoryHotplugPossible(spec *v1.VirtualMachineInstanceSpec, maxGuest *resource.Quantity) bool {
	d := &spec.Domain
	if d.CPU != nil && (d.CPU.Realtime != nil || (d.CPU.NUMA != nil && d.CPU.NUMA.GuestMappingPassthrough != nil)) {
		return false
	}
	if d.LaunchSecurity != nil || d.Memory == nil || d.Memory.Guest == nil || maxGuest == nil {
		return false
	}
	block := hotplugBlock
	if d.Memory.Hugepages != nil && d.Memory.Hugepages.PageSize == "1Gi" {
		block = hotplugBlock1Gi
	}
	guest := d.Memory.Guest.Value()
	return d.Memory.Guest.Cmp(*maxGuest) <= 0 &&
		guest%block == 0 &&
		maxGuest.Value()%block == 0 &&
		spec.Architecture == DefaultArchitecture &&
		guest >= hotplugMinMemory
}
