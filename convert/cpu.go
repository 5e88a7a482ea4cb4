package convert

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

var cpuPath = domainPath.Child("cpu")

// cpu writes the vCPUs and the guest CPU: <vcpu> and the hotpluggable
// <vcpus> of a VMI with cpu.maxSockets, <cpu> with its topology,
// mode/model and features (and a NUMA cell when guest memory is a memfd),
// and, for dedicated CPUs, the <cputune> pinning of vCPUs and the emulator
// thread to Options.CPUSet.
func (c *converter) cpu(d *libvirtxml.Domain) error {
	spec := c.spec.Domain.CPU
	if spec != nil {
		// KubeVirt's realtime needs guestMappingPassthrough; both need the
		// host's NUMA cells of Options.CPUSet, which Options do not carry.
		if spec.Realtime != nil {
			return field.Forbidden(cpuPath.Child("realtime"), "realtime VMIs need a NUMA topology passed through from the host, which the converter is not given")
		}
		if spec.NUMA != nil && spec.NUMA.GuestMappingPassthrough != nil {
			return field.Forbidden(cpuPath.Child("numa", "guestMappingPassthrough"), "mapping the host's NUMA cells into the guest needs the host's NUMA topology, which the converter is not given")
		}
	}
	t := c.cpuTopology()
	booted := t.count()
	cpu := &c.parts.cpu
	if spec != nil && spec.MaxSockets != 0 {
		if uint(spec.MaxSockets) < t.sockets {
			return field.Invalid(cpuPath.Child("maxSockets"), spec.MaxSockets, fmt.Sprintf("must not be less than sockets (%d)", t.sockets))
		}
		// Every socket beyond the booted ones can be plugged in later;
		// the first socket's vCPUs can never be unplugged.
		fixed := t.cores * t.threads
		t.sockets = uint(spec.MaxSockets)
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

	c.cpuModel(cpu)
	if err := c.cpuNUMA(cpu, t.count()); err != nil {
		return err
	}
	d.CPU = cpu

	if spec != nil && spec.DedicatedCPUPlacement {
		return c.pinCPUs(d, booted)
	}
	if spec != nil && spec.IsolateEmulatorThread {
		return field.Forbidden(cpuPath.Child("isolateEmulatorThread"), "needs spec.domain.cpu.dedicatedCpuPlacement")
	}
	return nil
}

// cpuModel sets the CPU mode and model and the CPU features. A VMI without
// a model gets host-model. Custom models get the deprecated mpx feature
// disabled unless the VMI says otherwise, as KubeVirt does on amd64: CPU
// models whose definition lists mpx fail on hosts that lack it.
func (c *converter) cpuModel(cpu *libvirtxml.DomainCPU) {
	spec := c.spec.Domain.CPU
	model := ""
	if spec != nil {
		model = spec.Model
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
		return
	}
	if n := len(spec.Features); n > 0 || cpu.Mode == "custom" {
		cpu.Features = make([]libvirtxml.DomainCPUFeature, 0, n+1)
	}
	hasMPX := false
	for _, f := range spec.Features {
		policy := f.Policy
		if policy == "" {
			policy = "require" // libvirt's meaning of a feature without policy
		}
		cpu.Features = append(cpu.Features, libvirtxml.DomainCPUFeature{Name: f.Name, Policy: policy})
		hasMPX = hasMPX || f.Name == "mpx"
	}
	if cpu.Mode == "custom" && !hasMPX {
		cpu.Features = append(cpu.Features, libvirtxml.DomainCPUFeature{Name: "mpx", Policy: "disable"})
	}
}

// cpuNUMA gives the guest one NUMA cell holding all vCPUs and all memory
// when its memory is a memfd (hugepages, shared memory), as KubeVirt does:
// QEMU backs such memory through a NUMA node's memory backend.
func (c *converter) cpuNUMA(cpu *libvirtxml.DomainCPU, vcpus uint) error {
	if !c.memfdRequired() {
		return nil
	}
	guest, from, ok := c.guestMemory()
	if !ok {
		return nil // the memory area says what is missing
	}
	size, err := memoryBytes(guest, from)
	if err != nil {
		return err
	}
	numa := new(numaParts)
	numa.cells[0] = libvirtxml.DomainCell{
		ID:     &numa.cellID,
		CPUs:   c.text.join("0-", c.text.decimal(uint64(vcpus-1))),
		Memory: uint(size / 1024),
		Unit:   "KiB",
	}
	numa.numa.Cell = numa.cells[:]
	cpu.Numa = &numa.numa
	return nil
}

// numaParts are the guest's one NUMA cell and what it points to.
type numaParts struct {
	numa   libvirtxml.DomainNuma
	cells  [1]libvirtxml.DomainCell
	cellID uint
}

// pinCPUs pins each booted vCPU to its own host CPU of Options.CPUSet, in
// order; then the threads of a supplemental IO thread pool and, with
// isolateEmulatorThread, the emulator thread take the next ones (two for the
// emulator when the alpha.kubevirt.io/EmulatorThreadCompleteToEvenParity
// annotation is set and the pinned count so far is even). Options.CPUSet
// should list sibling hyperthreads next to each other, as KubeVirt's pool
// places a vCPU core's threads on one host core.
func (c *converter) pinCPUs(d *libvirtxml.Domain, vcpus uint) error {
	spec := c.spec.Domain.CPU
	supplemental := c.supplementalIOThreads()
	emulator := uint(0)
	if spec.IsolateEmulatorThread {
		emulator = 1
		if _, ok := c.vmi.Annotations[v1.EmulatorThreadCompleteToEvenParity]; ok && (vcpus+supplemental)%2 == 0 {
			emulator = 2
		}
	}
	need := vcpus + supplemental + emulator
	if uint(len(c.opts.CPUSet)) < need {
		why := fmt.Sprintf("%d vCPUs", vcpus)
		if supplemental > 0 {
			why += fmt.Sprintf(", %d supplemental IO threads", supplemental)
		}
		if emulator > 0 {
			why += fmt.Sprintf(", %d for the emulator thread", emulator)
		}
		return field.Invalid(cpuPath.Child("dedicatedCpuPlacement"), true,
			fmt.Sprintf("needs %d dedicated host CPUs (%s), but Options.CPUSet has %d", need, why, len(c.opts.CPUSet)))
	}
	host := c.opts.CPUSet
	tune := &libvirtxml.DomainCPUTune{}
	for i := range vcpus {
		tune.VCPUPin = append(tune.VCPUPin, libvirtxml.DomainCPUTuneVCPUPin{VCPU: i, CPUSet: strconv.FormatUint(uint64(host[i]), 10)})
	}
	next := vcpus
	for id := uint(1); id <= supplemental; id++ {
		tune.IOThreadPin = append(tune.IOThreadPin, libvirtxml.DomainCPUTuneIOThreadPin{IOThread: id, CPUSet: strconv.FormatUint(uint64(host[next]), 10)})
		next++
	}
	if emulator > 0 {
		tune.EmulatorPin = &libvirtxml.DomainCPUTuneEmulatorPin{CPUSet: cpuList(host[next : next+emulator])}
	}
	d.CPUTune = tune
	return nil
}

// supplementalIOThreads returns the size of the VMI's supplemental IO
// thread pool (0 unless ioThreadsPolicy is supplementalPool).
func (c *converter) supplementalIOThreads() uint {
	dom := &c.spec.Domain
	if dom.IOThreadsPolicy == nil || *dom.IOThreadsPolicy != v1.IOThreadsPolicySupplementalPool ||
		dom.IOThreads == nil || dom.IOThreads.SupplementalPoolThreadCount == nil {
		return 0
	}
	return uint(*dom.IOThreads.SupplementalPoolThreadCount)
}

// pinIOThreads pins the domain's IO threads of a VMI with dedicated CPUs,
// as KubeVirt does: with an isolated emulator thread, IO thread 1 shares
// its host CPU; otherwise the IO threads spread over the vCPUs' host CPUs
// (one CPU each when there are at least as many IO threads as vCPUs, else
// balanced ranges). The IO threads of a supplemental pool were pinned to
// CPUs of their own by the cpu area. The iothreads area calls this once it
// has written <iothreads>.
func (c *converter) pinIOThreads(d *libvirtxml.Domain) {
	spec := c.spec.Domain.CPU
	if spec == nil || !spec.DedicatedCPUPlacement || d.CPUTune == nil || d.IOThreads == 0 || c.supplementalIOThreads() > 0 {
		return
	}
	tune := d.CPUTune
	host := c.opts.CPUSet
	vcpus := c.cpuTopology().count()
	n := d.IOThreads
	switch {
	case spec.IsolateEmulatorThread && tune.EmulatorPin != nil:
		tune.IOThreadPin = append(tune.IOThreadPin, libvirtxml.DomainCPUTuneIOThreadPin{IOThread: 1, CPUSet: tune.EmulatorPin.CPUSet})
	case n >= vcpus:
		for id := uint(1); id <= n; id++ {
			tune.IOThreadPin = append(tune.IOThreadPin, libvirtxml.DomainCPUTuneIOThreadPin{IOThread: id, CPUSet: strconv.FormatUint(uint64(host[id%vcpus]), 10)})
		}
	default:
		// e.g. 3 IO threads over 8 vCPUs: 0-2, 3-5, 6-7.
		first := uint(0)
		for id := uint(1); id <= n; id++ {
			size := vcpus / n
			if id <= vcpus%n {
				size++
			}
			tune.IOThreadPin = append(tune.IOThreadPin, libvirtxml.DomainCPUTuneIOThreadPin{IOThread: id, CPUSet: cpuList(host[first : first+size])})
			first += size
		}
	}
}

// cpuList spells host CPUs as a libvirt cpuset: "2,3".
func cpuList(cpus []uint) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.FormatUint(uint64(c), 10)
	}
	return strings.Join(s, ",")
}
