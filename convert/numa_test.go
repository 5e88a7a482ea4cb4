package convert

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	v1 "kubevirt.io/api/core/v1"
)

// twoCells is a host of two NUMA cells: CPUs 0-3 and 4-7.
var twoCells = []NUMACell{
	{ID: 0, CPUs: []NUMACPU{{ID: 0}, {ID: 1}, {ID: 2}, {ID: 3}}, Distances: map[uint]uint{0: 10, 1: 21}},
	{ID: 1, CPUs: []NUMACPU{{ID: 4}, {ID: 5}, {ID: 6}, {ID: 7}}, Distances: map[uint]uint{1: 10, 0: 21}},
}

// numaVMI asks for guest mapping passthrough with cores dedicated vCPUs,
// guest memory and 2Mi hugepages.
func numaVMI(cores uint32, memory string) *v1.VirtualMachineInstance {
	vmi := computeVMI(&v1.CPU{Cores: cores, DedicatedCPUPlacement: true, NUMA: &v1.NUMA{GuestMappingPassthrough: &v1.NUMAGuestMappingPassthrough{}}})
	guest := resource.MustParse(memory)
	vmi.Spec.Domain.Memory = &v1.Memory{Guest: &guest, Hugepages: &v1.Hugepages{PageSize: "2Mi"}}
	return vmi
}

// Only the host cells of pinned CPUs become guest cells, renumbered from
// 0, and a cell's distances name only mapped cells; the page size written
// per cell replaces Options.HugepageSize's page for all.
func TestNUMAOneCellOfTwo(t *testing.T) {
	vmi := numaVMI(2, "1Gi")
	d, _, err := runArea(t, vmi, func(o *Options) {
		o.CPUSet = []uint{6, 7}
		o.HostFacts.NUMA = twoCells
		o.HugepageSize = true
	}, (*converter).cpu, (*converter).memory)
	if err != nil {
		t.Fatal(err)
	}
	cells := d.CPU.Numa.Cell
	if len(cells) != 1 || *cells[0].ID != 0 || cells[0].CPUs != "0,1" || cells[0].Memory != 1<<30 || cells[0].Unit != "b" ||
		cells[0].Distances == nil || len(cells[0].Distances.Siblings) != 1 || cells[0].Distances.Siblings[0].Value != 10 {
		t.Errorf("cells = %+v", cells)
	}
	tune := d.NUMATune
	if tune == nil || tune.Memory.Mode != "strict" || tune.Memory.Nodeset != "1" || len(tune.MemNodes) != 1 ||
		tune.MemNodes[0].CellID != 0 || tune.MemNodes[0].Nodeset != "1" || tune.MemNodes[0].Mode != "strict" {
		t.Errorf("numatune = %+v", tune)
	}
	mb := d.MemoryBacking
	if mb == nil || mb.MemoryAllocation == nil || mb.MemoryAllocation.Mode != "immediate" || len(mb.MemoryHugePages.Hugepages) != 1 ||
		mb.MemoryHugePages.Hugepages[0].Size != 2<<20 || mb.MemoryHugePages.Hugepages[0].Nodeset != "0" {
		t.Errorf("memoryBacking = %+v", mb)
	}
}

// What KubeVirt's mapping fails on is refused at the field that asks for
// it.
func TestNUMARefusals(t *testing.T) {
	for _, tc := range []struct {
		name, memory string
		cpuSet       []uint
		cells        []NUMACell
		path, want   string
	}{
		{"no host cells", "1Gi", []uint{2, 4}, nil, "spec.domain.cpu.numa.guestMappingPassthrough", "Options.HostFacts.NUMA does not give"},
		{"CPU in no cell", "1Gi", []uint{2, 9}, twoCells, "spec.domain.cpu.numa.guestMappingPassthrough", "vCPU 1 is pinned to host CPU 9"},
		{"less than a page per cell", "2Mi", []uint{2, 4}, twoCells, "spec.domain.cpu.numa.guestMappingPassthrough", "less than one hugepage"},
		{"not whole pages", "1025Mi", []uint{2, 4}, twoCells, "spec.domain.cpu.numa.guestMappingPassthrough", "not a whole number of hugepages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runArea(t, numaVMI(2, tc.memory), func(o *Options) {
				o.CPUSet = tc.cpuSet
				o.HostFacts.NUMA = tc.cells
			}, (*converter).cpu)
			fieldErr(t, err, tc.path, tc.want)
		})
	}
}

// Without guest mapping passthrough the host's cells change nothing: a
// hugepages VMI keeps its one memfd cell.
func TestNUMAWithoutPassthrough(t *testing.T) {
	vmi := numaVMI(2, "1Gi")
	vmi.Spec.Domain.CPU.NUMA = nil
	d, _, err := runArea(t, vmi, func(o *Options) { o.HostFacts.NUMA = twoCells }, (*converter).cpu, (*converter).memory)
	if err != nil {
		t.Fatal(err)
	}
	if d.NUMATune != nil || len(d.CPU.Numa.Cell) != 1 || d.CPU.Numa.Cell[0].CPUs != "0-1" || d.MemoryBacking.MemoryAllocation != nil {
		t.Errorf("numatune %+v, cells %+v, backing %+v", d.NUMATune, d.CPU.Numa.Cell, d.MemoryBacking)
	}
}
