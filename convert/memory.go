package convert

import (
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/internal/quantity"
)

var memoryPath = domainPath.Child("memory")

// memory writes the guest memory (<memory>), the memory hotplug maximum
// (<maxMemory>) and the memory backing (hugepages, memfd, shared access).
//
// spec.domain.memory.reservedOverhead only sizes KubeVirt's pod (its
// overhead and memlock limit); there is no pod here and the domain is the
// same with or without it, as it is in KubeVirt.
func (c *converter) memory(d *libvirtxml.Domain) error {
	guest, from, ok := c.guestMemory()
	if !ok || guest.Sign() <= 0 {
		return field.Required(memoryPath.Child("guest"), "the guest needs memory: set spec.domain.memory.guest or spec.domain.resources.requests.memory")
	}
	size, err := memoryBytes(guest, from)
	if err != nil {
		return err
	}
	c.parts.memory = libvirtxml.DomainMemory{Value: uint(size), Unit: "b"}
	d.Memory = &c.parts.memory

	if m := c.spec.Domain.Memory; m != nil && m.MaxGuest != nil && !m.MaxGuest.Equal(guest) && !c.opts.NoMemoryHotplug {
		maxSize, err := memoryBytes(*m.MaxGuest, fromMaxGuest)
		if err != nil {
			return err
		}
		if maxSize < size {
			return field.Invalid(memoryPath.Child("maxGuest"), m.MaxGuest.String(), "must not be less than the guest memory "+guest.String())
		}
		// KubeVirt writes slots="0": memory is hotplugged as a virtio-mem
		// device, not as DIMMs. libvirtxml leaves a zero slot count out;
		// domain.Marshal writes it back.
		d.MaximumMemory = &libvirtxml.DomainMaxMemory{Value: uint(maxSize), Unit: "b"}
	}
	return c.memoryBacking(d)
}

// guestMemory returns the memory the guest boots with and the field it
// comes from: spec.domain.memory.guest, else the memory request, else the
// memory limit (as KubeVirt reads it). ok is false when none is set.
func (c *converter) guestMemory() (q resource.Quantity, from memoryField, ok bool) {
	if m := c.spec.Domain.Memory; m != nil && m.Guest != nil {
		return *m.Guest, fromGuest, true
	}
	res := c.spec.Domain.Resources
	if q, ok := res.Requests[k8sv1.ResourceMemory]; ok {
		return q, fromRequest, true
	}
	if q, ok := res.Limits[k8sv1.ResourceMemory]; ok {
		return q, fromLimit, true
	}
	return resource.Quantity{}, fromGuest, false
}

// memoryField is a VMI field that gives a memory size.
type memoryField int

const (
	fromGuest    memoryField = iota // spec.domain.memory.guest
	fromRequest                     // spec.domain.resources.requests.memory
	fromLimit                       // spec.domain.resources.limits.memory
	fromMaxGuest                    // spec.domain.memory.maxGuest
)

// path is the field's path, made for an error.
func (f memoryField) path() *field.Path {
	switch f {
	case fromRequest:
		return resourcesPath.Child("requests").Key(string(k8sv1.ResourceMemory))
	case fromLimit:
		return resourcesPath.Child("limits").Key(string(k8sv1.ResourceMemory))
	case fromMaxGuest:
		return memoryPath.Child("maxGuest")
	}
	return memoryPath.Child("guest")
}

// memoryBytes returns a memory quantity in bytes. A quantity with a
// fraction of a byte is rounded down, as KubeVirt does.
func memoryBytes(q resource.Quantity, from memoryField) (uint64, error) {
	n, exact := q.AsInt64()
	if !exact {
		n = q.Value() - 1
	}
	if n < 0 {
		return 0, field.Invalid(from.path(), q.String(), "must not be negative")
	}
	return uint64(n), nil
}

// memoryBacking writes <memoryBacking> as KubeVirt does: hugepages when the
// VMI asks for them (with their page size when Options.HugepageSize says so,
// so that libvirt takes pages of that size on a host that mounts several
// sizes, not only in a pod that mounts one), shared
// access for a passt interface, and a memfd source whenever either is there
// (hugepages only unless the kubevirt.io/memfd annotation is "false").
func (c *converter) memoryBacking(d *libvirtxml.Domain) error {
	hugepages := c.spec.Domain.Memory != nil && c.spec.Domain.Memory.Hugepages != nil
	shared := c.hasPasstBinding()
	if !hugepages && !shared {
		return nil
	}
	mb := &libvirtxml.DomainMemoryBacking{}
	if hugepages {
		page, err := c.hugepageKiB()
		if err != nil {
			return err
		}
		mb.MemoryHugePages = &libvirtxml.DomainMemoryHugepages{}
		if page != 0 && c.opts.HugepageSize {
			mb.MemoryHugePages.Hugepages = []libvirtxml.DomainMemoryHugepage{{Size: page, Unit: "KiB"}}
		}
	}
	if shared {
		mb.MemoryAccess = &libvirtxml.DomainMemoryAccess{Mode: "shared"}
	}
	if c.memfdRequired() {
		mb.MemorySource = &libvirtxml.DomainMemorySource{Type: "memfd"}
	}
	d.MemoryBacking = mb
	return nil
}

// hugepageKiB returns the hugepage size asked for in KiB, or 0 when the VMI
// leaves it to the host's default.
func (c *converter) hugepageKiB() (uint, error) {
	p := pageSizePath
	s := c.spec.Domain.Memory.Hugepages.PageSize
	if s == "" {
		return 0, nil
	}
	q, err := quantity.Parse(s)
	if err != nil {
		return 0, field.Invalid(p, s, "not a quantity: "+err.Error())
	}
	n, exact := q.AsInt64()
	if !exact || n <= 0 || n%1024 != 0 {
		return 0, field.Invalid(p, s, "must be a whole number of KiB, such as 2Mi or 1Gi")
	}
	return uint(n / 1024), nil
}

// memfdRequired tells whether guest memory must come from a memfd: for
// hugepages (unless the kubevirt.io/memfd annotation says "false") and for
// shared memory.
func (c *converter) memfdRequired() bool {
	if m := c.spec.Domain.Memory; m != nil && m.Hugepages != nil && c.vmi.Annotations[v1.MemfdMemoryBackend] != "false" {
		return true
	}
	return c.hasPasstBinding()
}

// hasPasstBinding tells whether an interface uses the core passt binding,
// whose vhost-user backend needs guest memory shared with passt.
func (c *converter) hasPasstBinding() bool {
	for _, iface := range c.spec.Domain.Devices.Interfaces {
		if iface.PasstBinding != nil {
			return true
		}
	}
	return false
}
