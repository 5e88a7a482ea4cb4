package convert

import (
	"testing"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	v1 "kubevirt.io/api/core/v1"
)

// maxMemory follows KubeVirt's MemoryConfigurator: written when maxGuest
// differs from guest (reference vmi-windows: 2Gi and 8Gi), left out with
// a host that lacks slotless memory hotplug (LackSlotlessMaxMemory).
func TestMemoryHotplug(t *testing.T) {
	vmi := computeVMI(nil)
	maxGuest := resource.MustParse("4Gi")
	vmi.Spec.Domain.Memory.MaxGuest = &maxGuest
	d, _, err := runArea(t, vmi, nil, (*converter).memory)
	if err != nil {
		t.Fatal(err)
	}
	if d.Memory.Value != 1<<30 || d.Memory.Unit != "b" || d.MaximumMemory == nil || d.MaximumMemory.Value != 4<<30 || d.MaximumMemory.Slots != 0 {
		t.Errorf("memory %+v, maxMemory %+v", d.Memory, d.MaximumMemory)
	}
	d, _, _ = runArea(t, vmi, func(o *Options) { o.HostFacts.Lacks = []Lack{LackSlotlessMaxMemory} }, (*converter).memory)
	if d.MaximumMemory != nil {
		t.Errorf("LackSlotlessMaxMemory: maxMemory %+v", d.MaximumMemory)
	}
	same := resource.MustParse("1Gi")
	vmi.Spec.Domain.Memory.MaxGuest = &same
	d, _, _ = runArea(t, vmi, nil, (*converter).memory)
	if d.MaximumMemory != nil {
		t.Errorf("maxGuest = guest: maxMemory %+v", d.MaximumMemory)
	}
}

// Without memory.guest, KubeVirt's GetVirtualMemory takes the request, else
// the limit; no memory at all is refused.
func TestMemoryFromResources(t *testing.T) {
	vmi := computeVMI(nil)
	vmi.Spec.Domain.Memory = nil
	vmi.Spec.Domain.Resources.Limits = k8sv1.ResourceList{k8sv1.ResourceMemory: resource.MustParse("256Mi")}
	d, _, err := runArea(t, vmi, nil, (*converter).memory)
	if err != nil || d.Memory.Value != 256<<20 {
		t.Errorf("from limit: %v, %+v", err, d.Memory)
	}
	vmi.Spec.Domain.Resources.Requests = k8sv1.ResourceList{k8sv1.ResourceMemory: resource.MustParse("128Mi")}
	d, _, err = runArea(t, vmi, nil, (*converter).memory)
	if err != nil || d.Memory.Value != 128<<20 {
		t.Errorf("from request: %v, %+v", err, d.Memory)
	}
	vmi.Spec.Domain.Resources = v1.ResourceRequirements{}
	refusedByAPI(t, vmi, "spec.domain.memory.guest", "no memory requested")
}

// Hugepages: KubeVirt's MemoryBackingConfigurator gives <hugepages/> and a
// memfd source (unless kubevirt.io/memfd is "false"), and its CPU
// configurator one NUMA cell for the memfd; the page size is written too.
func TestMemoryHugepages(t *testing.T) {
	vmi := computeVMI(&v1.CPU{Cores: 2})
	vmi.Spec.Domain.Memory.Hugepages = &v1.Hugepages{PageSize: "2Mi"}
	// KubeVirt writes <hugepages/> without a size (compute/memory_backing.go).
	d, _, err := runArea(t, vmi, nil, (*converter).memory, (*converter).cpu)
	if err != nil {
		t.Fatal(err)
	}
	if mb := d.MemoryBacking; mb == nil || mb.MemoryHugePages == nil || len(mb.MemoryHugePages.Hugepages) != 0 {
		t.Errorf("KubeVirt options: memoryBacking = %+v, want <hugepages/> without a size", mb)
	}
	d, _, err = runArea(t, vmi, func(o *Options) { o.HugepageSize = true }, (*converter).memory, (*converter).cpu)
	if err != nil {
		t.Fatal(err)
	}
	mb := d.MemoryBacking
	if mb == nil || mb.MemoryHugePages == nil || len(mb.MemoryHugePages.Hugepages) != 1 || mb.MemoryHugePages.Hugepages[0].Size != 2048 ||
		mb.MemoryHugePages.Hugepages[0].Unit != "KiB" || mb.MemorySource == nil || mb.MemorySource.Type != "memfd" || mb.MemoryAccess != nil {
		t.Errorf("memoryBacking = %+v", mb)
	}
	if n := d.CPU.Numa; n == nil || len(n.Cell) != 1 || n.Cell[0].CPUs != "0-1" || n.Cell[0].Memory != 1<<20 || n.Cell[0].Unit != "KiB" {
		t.Errorf("numa = %+v", d.CPU.Numa)
	}

	vmi.Annotations = map[string]string{v1.MemfdMemoryBackend: "false"}
	d, _, _ = runArea(t, vmi, nil, (*converter).memory, (*converter).cpu)
	if d.MemoryBacking.MemorySource != nil || d.CPU.Numa != nil {
		t.Errorf("memfd off: memoryBacking %+v, numa %+v", d.MemoryBacking, d.CPU.Numa)
	}

	vmi.Spec.Domain.Memory.Hugepages.PageSize = "3.5Ki"
	refusedByAPI(t, vmi, "spec.domain.memory.hugepages.pageSize", "whole number of KiB")
	d, _, err = runArea(t, vmi, func(o *Options) { o.HugepageSize = true }, (*converter).memory)
	if err != nil || len(d.MemoryBacking.MemoryHugePages.Hugepages) != 0 {
		t.Errorf("without validation: %v, hugepages %+v; want no page size", err, d.MemoryBacking.MemoryHugePages)
	}
}
