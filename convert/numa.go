package convert

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// numaPlan is the guest NUMA topology of a VMI with
// spec.domain.cpu.numa.guestMappingPassthrough, mapped from the host's
// cells (Options.HostFacts.NUMA) as KubeVirt's virt-launcher maps them:
// one guest cell for each host cell that holds a pinned vCPU, in the host's
// order, with those vCPUs, an equal share of guest memory in hugepages
// taken strictly from that host cell, and the host's distances between the
// cells kept. The cpu area writes the cells and <numatune>, the memory
// area the hugepages of each cell and their immediate allocation. The
// vCPUs are pinned as Options.CPUSet lists them (planPins); KubeVirt's
// strict CPU pool hands them out cell by cell and core by core of the
// host, keeping a guest core's threads in one cell, which is the same
// for a CPUSet listed in that order (compute-numa-passthrough's).
type numaPlan struct {
	// cells are the guest cells; none when the VMI does not ask for the
	// mapping, or when err refuses it.
	cells []guestCell
	// pageBytes is the hugepage size.
	pageBytes uint64
	// err refuses the mapping at its field (the cpu area returns it).
	err *field.Error
}

// guestCell is a guest NUMA cell backed by one host cell.
type guestCell struct {
	// host is the host cell's id.
	host uint
	// vcpus are the guest's vCPUs pinned to the host cell's CPUs.
	vcpus []uint
	// memory is the cell's guest memory in bytes.
	memory uint64
	// distances are the host's distances to the other mapped cells, by
	// their guest ids.
	distances []libvirtxml.DomainCellSibling
}

// numaPassthroughPath is the field that asks for the mapping.
var numaPassthroughPath = cpuPath.Child("numa", "guestMappingPassthrough")

// planNUMA maps the host's cells into the guest for a VMI that asks for it
// (KubeVirt's numaMapping), given the vCPUs' pins and the guest memory in
// bytes. Without the host's topology the mapping is refused (and with it
// a realtime VMI, which KubeVirt maps so). A VMI that api.Validate refuses
// (no dedicated CPUs, no hugepages) gets no plan; so does one short of
// host CPUs (the cpu area refuses it).
func planNUMA(vmi *v1.VirtualMachineInstance, host []NUMACell, pins *cpuPins, memory uint64) numaPlan {
	dom := &vmi.Spec.Domain
	if dom.CPU == nil || dom.CPU.NUMA == nil || dom.CPU.NUMA.GuestMappingPassthrough == nil {
		return numaPlan{}
	}
	if len(host) == 0 {
		return numaPlan{err: field.Forbidden(numaPassthroughPath,
			"mapping the host's NUMA cells into the guest needs the host's NUMA topology, which Options.HostFacts.NUMA does not give")}
	}
	if !pins.dedicated || pins.short || dom.Memory == nil || dom.Memory.Hugepages == nil {
		return numaPlan{}
	}
	cellOf := map[uint]int{}
	for i, cell := range host {
		for _, cpu := range cell.CPUs {
			cellOf[cpu.ID] = i
		}
	}
	vcpusOf := make([][]uint, len(host))
	for vcpu, cpu := range pins.vcpus {
		i, ok := cellOf[cpu]
		if !ok {
			return numaPlan{err: field.Invalid(numaPassthroughPath, "{}",
				fmt.Sprintf("vCPU %d is pinned to host CPU %d, which no NUMA cell of Options.HostFacts.NUMA holds", vcpu, cpu))}
		}
		vcpusOf[i] = append(vcpusOf[i], uint(vcpu))
	}
	plan := numaPlan{pageBytes: uint64(hugepageKiB(dom.Memory.Hugepages.PageSize)) * 1024}
	guestID := map[uint]uint{}
	for i, vcpus := range vcpusOf {
		if len(vcpus) > 0 {
			guestID[host[i].ID] = uint(len(plan.cells))
			plan.cells = append(plan.cells, guestCell{host: host[i].ID, vcpus: vcpus})
		}
	}
	if err := plan.shareMemory(memory); err != nil {
		return numaPlan{err: err}
	}
	for i, vcpus := range vcpusOf {
		if len(vcpus) == 0 {
			continue
		}
		gc := &plan.cells[guestID[host[i].ID]]
		for _, other := range slices.Sorted(maps.Keys(host[i].Distances)) {
			if id, ok := guestID[other]; ok {
				gc.distances = append(gc.distances, libvirtxml.DomainCellSibling{ID: id, Value: host[i].Distances[other]})
			}
		}
	}
	return plan
}

// shareMemory gives each cell an equal share of memory in whole
// hugepages, the first cells one page more each while pages are left
// over, as KubeVirt does; memory too small for a page per cell, or not a
// whole number of pages, is refused.
func (p *numaPlan) shareMemory(memory uint64) *field.Error {
	page, n := p.pageBytes, uint64(len(p.cells))
	if page == 0 {
		return field.Invalid(domainPath.Child("memory", "hugepages", "pageSize"), "",
			"mapping the host's NUMA cells into the guest needs a hugepage size")
	}
	switch {
	case memory < n*page:
		return field.Invalid(numaPassthroughPath, "{}",
			fmt.Sprintf("guest memory (%d bytes) is less than one hugepage of %d bytes for each of the %d NUMA cells its vCPUs are pinned to", memory, page, n))
	case memory%page != 0:
		return field.Invalid(numaPassthroughPath, "{}",
			fmt.Sprintf("guest memory (%d bytes) is not a whole number of hugepages of %d bytes", memory, page))
	}
	pages := memory / page
	for i := range p.cells {
		p.cells[i].memory = pages / n * page
		if uint64(i) < pages%n {
			p.cells[i].memory += page
		}
	}
	return nil
}

// numaCells writes the plan's guest cells and <numatune>: guest memory
// strictly from the mapped host cells, each guest cell's from its own.
func (c *converter) numaCells(d *libvirtxml.Domain, cpu *libvirtxml.DomainCPU) {
	plan := &c.facts.numa
	if len(plan.cells) == 0 {
		return
	}
	numa := &libvirtxml.DomainNuma{}
	tune := &libvirtxml.DomainNUMATune{Memory: &libvirtxml.DomainNUMATuneMemory{Mode: "strict"}}
	ids := make([]uint, len(plan.cells))
	var hostCells []uint
	for i, gc := range plan.cells {
		ids[i] = uint(i)
		cell := libvirtxml.DomainCell{ID: &ids[i], CPUs: cpuList(gc.vcpus), Memory: uint(gc.memory), Unit: "b"}
		if len(gc.distances) > 0 {
			cell.Distances = &libvirtxml.DomainCellDistances{Siblings: gc.distances}
		}
		numa.Cell = append(numa.Cell, cell)
		tune.MemNodes = append(tune.MemNodes, libvirtxml.DomainNUMATuneMemNode{CellID: uint(i), Mode: "strict", Nodeset: strconv.FormatUint(uint64(gc.host), 10)})
		hostCells = append(hostCells, gc.host)
	}
	tune.Memory.Nodeset = cpuList(hostCells)
	cpu.Numa = numa
	d.NUMATune = tune
}

// hugepages are the hugepages of each mapped guest cell (nil without
// a mapping).
func (p *numaPlan) hugepages() []libvirtxml.DomainMemoryHugepage {
	var pages []libvirtxml.DomainMemoryHugepage
	for i := range p.cells {
		pages = append(pages, libvirtxml.DomainMemoryHugepage{Size: uint(p.pageBytes), Unit: "b", Nodeset: strconv.Itoa(i)})
	}
	return pages
}
