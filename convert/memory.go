package convert

import (
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/internal/quantity"
)

// memory writes the guest memory (<memory>), the memory hotplug maximum
// (<maxMemory>) and the memory backing (hugepages, memory shared with
// virtiofsd, from a memfd).
//
// spec.domain.memory.reservedOverhead only sizes KubeVirt's pod (its
// overhead and memlock limit); there is no pod here and the domain is the
// same with or without it, as it is in KubeVirt.
func (c *converter) memory(d *libvirtxml.Domain) error {
	size := c.facts.memory
	c.parts.memory = libvirtxml.DomainMemory{Value: uint(size), Unit: "b"}
	d.Memory = &c.parts.memory

	guest, _ := guestMemory(&c.spec.Domain)
	if m := c.spec.Domain.Memory; m != nil && m.MaxGuest != nil && !m.MaxGuest.Equal(guest) && c.opts.HostFacts.Has(LackSlotlessMaxMemory) {
		// KubeVirt writes slots="0": memory is hotplugged as a virtio-mem
		// device, not as DIMMs. libvirtxml leaves a zero slot count out;
		// domain.Marshal writes it back.
		d.MaximumMemory = &libvirtxml.DomainMaxMemory{Value: uint(bytesOf(*m.MaxGuest)), Unit: "b"}
	}
	c.memoryBacking(d)
	return nil
}

// memoryBacking writes <memoryBacking> as KubeVirt does: hugepages when the
// VMI asks for them (with their page size when Options.HugepageSize says so,
// so that libvirt takes pages of that size on a host that mounts several
// sizes, not only in a pod that mounts one; for NUMA passthrough, each
// cell's, allocated at once, and never merged for a realtime VMI), shared
// access when virtiofsd reads guest memory (a virtiofs filesystem), and
// from a memfd for shared memory or hugepages (unless the kubevirt.io/memfd
// annotation is "false").
func (c *converter) memoryBacking(d *libvirtxml.Domain) {
	m := c.spec.Domain.Memory
	hugepages := m != nil && m.Hugepages != nil
	if !hugepages && !c.facts.sharedMemory {
		return
	}
	mb := &libvirtxml.DomainMemoryBacking{}
	if hugepages {
		mb.MemoryHugePages = &libvirtxml.DomainMemoryHugepages{}
		if page := hugepageKiB(m.Hugepages.PageSize); page != 0 && c.opts.HugepageSize {
			mb.MemoryHugePages.Hugepages = []libvirtxml.DomainMemoryHugepage{{Size: page, Unit: "KiB"}}
		}
		if pages := c.facts.numa.hugepages(); pages != nil {
			mb.MemoryHugePages.Hugepages = pages
			mb.MemoryAllocation = &libvirtxml.DomainMemoryAllocation{Mode: "immediate"}
			if c.facts.realtime.on {
				mb.MemoryNosharepages = &libvirtxml.DomainMemoryNosharepages{}
			}
		}
	}
	if c.facts.sharedMemory {
		mb.MemoryAccess = &libvirtxml.DomainMemoryAccess{Mode: "shared"}
	}
	if c.facts.memfd {
		mb.MemorySource = &libvirtxml.DomainMemorySource{Type: "memfd"}
	}
	d.MemoryBacking = mb
}

// hugepageKiB returns a hugepage size in KiB, or 0 when the VMI leaves it
// to the host's default (or names one api.Validate refuses: not a whole
// number of KiB).
func hugepageKiB(s string) uint {
	if s == "" {
		return 0
	}
	q, err := quantity.Parse(s)
	if err != nil {
		return 0
	}
	n, exact := q.AsInt64()
	if !exact || n <= 0 || n%1024 != 0 {
		return 0
	}
	return uint(n / 1024)
}
