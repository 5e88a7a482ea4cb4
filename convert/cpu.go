package convert

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/api"
)

// cpu writes the vCPUs and the guest CPU: <vcpu> and the hotpluggable
// <vcpus> of a VMI with cpu.maxSockets, <cpu> with its topology,
// mode/model and features (and a NUMA cell when guest memory is a memfd),
// and, for dedicated CPUs, the <cputune> pinning of vCPUs and the emulator
// thread to Options.CPUSet (the iothreads area pins the IO threads); for
// a realtime VMI, the vCPUs' scheduling (<vcpusched>, realtimePlan).
func (c *converter) cpu(d *libvirtxml.Domain) error {
	spec := c.spec.Domain.CPU
	t := c.facts.topology
	booted := t.count()
	cpu := &c.parts.cpu
	// Every socket beyond the booted ones can be plugged in later; the
	// first socket's vCPUs can never be unplugged. (api.Validate refuses
	// fewer maxSockets than sockets, and more vCPUs than api.MaxVCPUs: such
	// a VMI gets no list of hotpluggable vCPUs.)
	fixed, maxSockets := t.cores*t.threads, uint(0)
	if spec != nil {
		maxSockets = uint(spec.MaxSockets)
	}
	if maxSockets != 0 && maxSockets >= t.sockets &&
		maxSockets <= api.MaxVCPUs && fixed <= api.MaxVCPUs && maxSockets*fixed <= api.MaxVCPUs {
		t.sockets = maxSockets
		vcpus := &libvirtxml.DomainVCPUs{VCPU: make([]libvirtxml.DomainVCPUsVCPU, 0, t.count())}
		ids := make([]uint, t.count())
		for id := range t.count() {
			ids[id] = id
			vcpus.VCPU = append(vcpus.VCPU, libvirtxml.DomainVCPUsVCPU{
				Id:           &ids[id],
				Enabled:      boolYesNo(id < booted),
				Hotpluggable: boolYesNo(id >= fixed),
			})
		}
		d.VCPUs = vcpus
	}
	c.parts.topology = libvirtxml.DomainCPUTopology{Sockets: int(t.sockets), Cores: int(t.cores), Threads: int(t.threads)}
	cpu.Topology = &c.parts.topology
	c.parts.vcpu = libvirtxml.DomainVCPU{Placement: "static", Value: t.count()}
	d.VCPU = &c.parts.vcpu

	if err := c.cpuModel(cpu); err != nil {
		return err
	}
	if c.facts.numa.err != nil {
		return c.facts.numa.err
	}
	c.cpuNUMA(cpu, t.count())
	c.numaCells(d, cpu)
	d.CPU = cpu
	if err := c.pinCPUs(d); err != nil {
		return err
	}
	if sched := c.facts.realtime.vcpuSched(&c.text); sched != nil {
		cpuTune(d).VCPUSched = sched
	}
	return nil
}

// cpuModel sets the CPU mode and model and the CPU features. A VMI without
// a model gets host-model. Custom models get the deprecated mpx feature
// disabled unless the VMI says otherwise, as KubeVirt does on amd64: CPU
// models whose definition lists mpx fail on hosts that lack it. A model,
// or a required feature, that the host does not offer is refused
// (Options.HostFacts).
func (c *converter) cpuModel(cpu *libvirtxml.DomainCPU) error {
	spec := c.spec.Domain.CPU
	model := ""
	if spec != nil {
		model = spec.Model
	}
	if err := c.opts.HostFacts.checkCPUModel(model); err != nil {
		return err
	}
	switch model {
	case "", v1.CPUModeHostModel:
		cpu.Mode = v1.CPUModeHostModel
	case v1.CPUModeHostPassthrough:
		cpu.Mode = v1.CPUModeHostPassthrough
	default:
		cpu.Mode = "custom"
		cpu.Model = &libvirtxml.DomainCPUModel{Value: model}
	}
	if spec == nil {
		return nil
	}
	if n := len(spec.Features); n > 0 || cpu.Mode == "custom" {
		cpu.Features = make([]libvirtxml.DomainCPUFeature, 0, n+1)
	}
	hasMPX := false
	for i, f := range spec.Features {
		policy := f.Policy
		if policy == "" {
			policy = "require" // libvirt's meaning of a feature without policy
		}
		if err := c.opts.HostFacts.checkCPUFeature(i, f.Name, policy, cpu.Mode); err != nil {
			return err
		}
		cpu.Features = append(cpu.Features, libvirtxml.DomainCPUFeature{Name: f.Name, Policy: policy})
		hasMPX = hasMPX || f.Name == "mpx"
	}
	if cpu.Mode == "custom" && !hasMPX {
		cpu.Features = append(cpu.Features, libvirtxml.DomainCPUFeature{Name: "mpx", Policy: "disable"})
	}
	return nil
}

// cpuNUMA gives the guest one NUMA cell holding all vCPUs and all memory
// when its memory is a memfd (hugepages, virtiofs), as KubeVirt does: QEMU backs such
// memory through a NUMA node's memory backend.
func (c *converter) cpuNUMA(cpu *libvirtxml.DomainCPU, vcpus uint) {
	if !c.facts.memfd || c.facts.memory == 0 {
		return
	}
	numa := new(numaParts)
	numa.cells[0] = libvirtxml.DomainCell{
		ID:     &numa.cellID,
		CPUs:   c.text.join("0-", c.text.decimal(uint64(vcpus-1))),
		Memory: uint(c.facts.memory / 1024),
		Unit:   "KiB",
	}
	numa.numa.Cell = numa.cells[:]
	cpu.Numa = &numa.numa
}

// numaParts are the guest's one NUMA cell and what it points to.
type numaParts struct {
	numa   libvirtxml.DomainNuma
	cells  [1]libvirtxml.DomainCell
	cellID uint
}

// pinCPUs pins each booted vCPU of a VMI with dedicated CPUs to its own host
// CPU and an isolated emulator thread to the next ones, as the pins fact
// chose them, or refuses the VMI when Options.CPUSet has too few.
func (c *converter) pinCPUs(d *libvirtxml.Domain) error {
	pins := &c.facts.pins
	if !pins.dedicated {
		return nil
	}
	if pins.short {
		why := fmt.Sprintf("%d vCPUs", pins.need-pins.emulatorCPUs)
		if pins.emulatorCPUs > 0 {
			why += fmt.Sprintf(", %d for the emulator thread", pins.emulatorCPUs)
		}
		return field.Invalid(cpuPath.Child("dedicatedCpuPlacement"), true,
			fmt.Sprintf("needs %d dedicated host CPUs (%s), but Options.CPUSet has %d", pins.need, why, len(c.opts.CPUSet)))
	}
	tune := cpuTune(d)
	for i, host := range pins.vcpus {
		tune.VCPUPin = append(tune.VCPUPin, libvirtxml.DomainCPUTuneVCPUPin{VCPU: uint(i), CPUSet: strconv.FormatUint(uint64(host), 10)})
	}
	if len(pins.emulator) > 0 {
		tune.EmulatorPin = &libvirtxml.DomainCPUTuneEmulatorPin{CPUSet: cpuList(pins.emulator)}
	}
	return nil
}
