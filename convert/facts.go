package convert

import (
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/internal/vocab"
)

// facts are what several areas of the domain need to know of a VMI and the
// options, worked out once by start before any area runs. An area reads
// them and writes only its own elements: no area calls another area's
// functions, and none depends on what an earlier one wrote.
type facts struct {
	// topology is the guest CPU topology the VMI boots with (the cpu area
	// writes it; multi-queue disks and NICs have one queue per vCPU).
	topology topology
	// virtioModel is the model of virtio devices (disks, controllers,
	// interfaces, balloon, rng): "virtio-non-transitional", or
	// "virtio-transitional" when the VMI asks for transitional devices.
	virtioModel string
	// memory is the guest memory in bytes (the memory area writes it, the
	// cpu area sizes a NUMA cell with it); 0 when the VMI names none.
	memory uint64
	// memfd tells whether guest memory comes from a memfd (the memory
	// area's backing, and the cpu area's NUMA cell QEMU backs it through).
	memfd bool
	// sharedMemory tells whether guest memory is shared with another
	// process (virtiofsd, for a virtiofs filesystem): the memory area's
	// <access mode="shared"/>.
	sharedMemory bool
	// ioThreads is how the disks share QEMU IO threads: the iothreads area
	// writes <iothreads> and pins them, the disks area gives each virtio
	// disk its thread, the controllers area picks the SCSI controller's.
	ioThreads ioThreadPlan
	// pins are the host CPUs of a VMI with dedicated CPUs: the cpu area
	// pins the vCPUs and the emulator thread, the iothreads area the IO
	// threads.
	pins cpuPins
	// numa is the guest NUMA topology mapped from the host's (guest
	// mapping passthrough): the cpu area writes its cells and
	// <numatune>, the memory area their hugepages.
	numa numaPlan
	// realtime is what spec.domain.cpu.realtime gives: the features
	// area's PMU, the memory area's <nosharepages/>, the cpu area's
	// <vcpusched>.
	realtime realtimePlan
	// iommu tells whether the guest's virtio devices reach memory through
	// an IOMMU (iommu="on" on their drivers): an AMD SEV guest's, whose
	// memory is encrypted (usesSEV; KubeVirt's UseLaunchSecuritySEV) —
	// its virtio disks, interfaces, SCSI and virtio-serial controllers,
	// balloon and rng.
	iommu bool
}

// gatherFacts works out the facts of converting vmi with opts.
func gatherFacts(vmi *v1.VirtualMachineInstance, opts *Options) facts {
	dom := &vmi.Spec.Domain
	f := facts{topology: cpuTopology(dom), virtioModel: "virtio-non-transitional"}
	if switchedOn(dom.Devices.UseVirtioTransitional) {
		f.virtioModel = "virtio-transitional"
	}
	if q, ok := guestMemory(dom); ok {
		f.memory = bytesOf(q)
	}
	// As KubeVirt's isMemfdRequired: hugepages come from a memfd unless
	// the annotation says no; shared memory always does.
	f.sharedMemory = hasVirtiofs(vmi)
	f.memfd = f.sharedMemory || dom.Memory != nil && dom.Memory.Hugepages != nil && vmi.Annotations[v1.MemfdMemoryBackend] != "false"
	f.ioThreads = planIOThreads(dom)
	f.pins = planPins(vmi, f.topology.count(), f.ioThreads.pool, opts.CPUSet)
	f.numa = planNUMA(vmi, opts.HostFacts.NUMA, &f.pins, f.memory)
	f.realtime = planRealtime(vmi, f.topology.count())
	f.iommu = usesSEV(vmi)
	return f
}

// topology is a guest CPU topology.
type topology struct {
	sockets, cores, threads uint
}

// count is the number of vCPUs of the topology.
func (t topology) count() uint { return t.sockets * t.cores * t.threads }

// cpuTopology returns the guest CPU topology the VMI boots with, as KubeVirt
// reads it: the sockets, cores and threads of spec.domain.cpu (1 for each
// one left out); when none of the three is set, as many sockets as the CPU
// limit (or else request) of spec.domain.resources asks for. The admission
// defaults normally set the topology; this covers VMIs that skipped them.
func cpuTopology(dom *v1.DomainSpec) topology {
	t := topology{sockets: 1, cores: 1, threads: 1}
	cpu := dom.CPU
	if cpu != nil {
		if cpu.Sockets != 0 {
			t.sockets = uint(cpu.Sockets)
		}
		if cpu.Cores != 0 {
			t.cores = uint(cpu.Cores)
		}
		if cpu.Threads != 0 {
			t.threads = uint(cpu.Threads)
		}
	}
	if cpu == nil || cpu.Sockets == 0 && cpu.Cores == 0 && cpu.Threads == 0 {
		res := dom.Resources
		q, ok := res.Limits[k8sv1.ResourceCPU]
		if !ok {
			q, ok = res.Requests[k8sv1.ResourceCPU]
		}
		if ok && q.Value() > 0 {
			t.sockets = uint(q.Value())
		}
	}
	return t
}

// guestMemory returns the memory the guest boots with: spec.domain.memory.guest,
// else the memory request, else the memory limit (as KubeVirt reads it).
// ok is false when none is set.
func guestMemory(dom *v1.DomainSpec) (q resource.Quantity, ok bool) {
	if m := dom.Memory; m != nil && m.Guest != nil {
		return *m.Guest, true
	}
	if q, ok := dom.Resources.Requests[k8sv1.ResourceMemory]; ok {
		return q, true
	}
	if q, ok := dom.Resources.Limits[k8sv1.ResourceMemory]; ok {
		return q, true
	}
	return resource.Quantity{}, false
}

// ioThreadPlan is how a VMI's disks share QEMU IO threads, as KubeVirt plans
// them: IO threads 1…shared are shared round-robin by the virtio disks
// without a dedicated thread, and each disk with dedicatedIOThread gets one
// of the following ids. The plan and the iothreads area, which writes it
// and refuses what libvirt cannot do, are the two readings of
// spec.domain.ioThreadsPolicy.
//
// KubeVirt's supplementalPool policy maps every queue of every virtio disk
// to a pool of threads (<driver><iothreads><iothread id=…>, libvirt 10.0):
// threads 1…pool, none shared and none dedicated. The iothreads area
// refuses it where the host lacks the form.
type ioThreadPlan struct {
	total  uint // the domain's <iothreads>; 0 leaves IO threads off
	shared uint // threads 1…shared are shared round-robin
	pool   uint // threads 1…pool are the supplemental pool of every virtio disk
}

// planIOThreads plans the IO threads of spec.domain.ioThreadsPolicy and the
// disks' dedicatedIOThread (api.Validate refuses a policy it does not know,
// which gets none).
func planIOThreads(dom *v1.DomainSpec) ioThreadPlan {
	dedicated, others := uint(0), uint(0)
	for i := range dom.Devices.Disks {
		if hasDedicatedIOThread(&dom.Devices.Disks[i]) {
			dedicated++
		} else {
			others++
		}
	}
	policy := dom.IOThreadsPolicy
	switch {
	case policy == nil && dedicated == 0:
		return ioThreadPlan{}
	case policy == nil, *policy == v1.IOThreadsPolicyShared:
		return sharedPlan(dedicated, others, 1)
	case *policy == v1.IOThreadsPolicyAuto:
		return sharedPlan(dedicated, others, autoThreadLimit(dom))
	case *policy == v1.IOThreadsPolicySupplementalPool:
		if t := dom.IOThreads; t != nil && t.SupplementalPoolThreadCount != nil && *t.SupplementalPoolThreadCount > 0 {
			n := uint(*t.SupplementalPoolThreadCount)
			return ioThreadPlan{total: n, pool: n}
		}
	}
	return ioThreadPlan{}
}

// sharedPlan gives each dedicated disk its own thread and the other disks as
// many shared threads as the limit leaves, at least one.
func sharedPlan(dedicated, others, limit uint) ioThreadPlan {
	shared := others
	if dedicated+others > limit {
		shared = 1
		if limit > dedicated+1 {
			shared = limit - dedicated
		}
	}
	return ioThreadPlan{total: shared + dedicated, shared: shared}
}

// autoThreadLimit is the most IO threads the auto policy uses: two per
// requested CPU (or CPU limit, or 1), or one when the emulator thread has a
// dedicated CPU that the IO threads share.
func autoThreadLimit(dom *v1.DomainSpec) uint {
	cpu := dom.CPU
	if cpu != nil && cpu.DedicatedCPUPlacement && cpu.IsolateEmulatorThread {
		return 1
	}
	cpus := int64(1)
	if q, ok := dom.Resources.Requests[k8sv1.ResourceCPU]; ok {
		cpus = q.Value()
	} else if q, ok := dom.Resources.Limits[k8sv1.ResourceCPU]; ok {
		cpus = q.Value()
	}
	return uint(max(cpus, 0)) * 2
}

// hasDedicatedIOThread tells whether a disk asks for an IO thread of its
// own.
func hasDedicatedIOThread(disk *v1.Disk) bool {
	return disk.DedicatedIOThread != nil && *disk.DedicatedIOThread
}

// ioThreadAssigner hands out the IO threads of a plan to the virtio disks,
// in spec order (the disks area).
type ioThreadAssigner struct {
	plan      ioThreadPlan
	nextAuto  uint
	nextFixed uint
}

// assigner starts handing out the plan's threads.
func (p ioThreadPlan) assigner() ioThreadAssigner {
	return ioThreadAssigner{plan: p, nextAuto: 1, nextFixed: p.shared + 1}
}

// next returns the IO thread of the next virtio disk in spec order, or 0
// when the plan has none (a supplemental pool serves every disk).
func (a *ioThreadAssigner) next(disk *v1.Disk) uint {
	switch {
	case a.plan.total == 0, a.plan.pool > 0:
		return 0
	case hasDedicatedIOThread(disk):
		a.nextFixed++
		return a.nextFixed - 1
	}
	id := a.nextAuto
	a.nextAuto = a.nextAuto%a.plan.shared + 1
	return id
}

// cpuPins are the host CPUs of a VMI with dedicated CPUs, taken from
// Options.CPUSet in order: one per booted vCPU, then, with
// isolateEmulatorThread, one for the emulator thread (two when the
// alpha.kubevirt.io/EmulatorThreadCompleteToEvenParity annotation is set
// and the vCPU count is even). Options.CPUSet should list sibling
// hyperthreads next to each other, as KubeVirt's pool places a vCPU core's
// threads on one host core.
type cpuPins struct {
	// dedicated tells whether the VMI has dedicated CPUs at all.
	dedicated bool
	// need is how many host CPUs they take, emulatorCPUs how many of
	// them the emulator thread's; short is true when Options.CPUSet has
	// fewer (the cpu area refuses the VMI).
	need, emulatorCPUs uint
	short              bool
	// vcpus, pool and emulator are the host CPUs of the booted vCPUs, of
	// the supplemental pool's IO threads and of the emulator thread (empty
	// when short).
	vcpus, pool, emulator []uint
}

// planPins picks the host CPUs of vmi's booted vCPUs (vcpus of them), of
// its supplemental pool's IO threads (pool of them) and of its emulator
// thread from cpuSet, in that order, as KubeVirt's CPU pool hands them out
// (the emulator's parity counts the pool's CPUs).
func planPins(vmi *v1.VirtualMachineInstance, vcpus, pool uint, cpuSet []uint) cpuPins {
	cpu := vmi.Spec.Domain.CPU
	if cpu == nil || !cpu.DedicatedCPUPlacement {
		return cpuPins{}
	}
	emulator := uint(0)
	if cpu.IsolateEmulatorThread {
		emulator = 1
		if _, ok := vmi.Annotations[v1.EmulatorThreadCompleteToEvenParity]; ok && (vcpus+pool)%2 == 0 {
			emulator = 2
		}
	}
	p := cpuPins{dedicated: true, need: vcpus + pool + emulator, emulatorCPUs: emulator}
	if have := uint(len(cpuSet)); vcpus > have || have-vcpus < pool+emulator {
		p.short = true
		return p
	}
	p.vcpus, p.pool, p.emulator = cpuSet[:vcpus], cpuSet[vcpus:vcpus+pool], cpuSet[vcpus+pool:p.need]
	return p
}

// inputBus is the bus of an input device: USB unless it says virtio.
func inputBus(in *v1.Input) v1.InputBus {
	if in.Bus == "" {
		return v1.InputBusUSB
	}
	return in.Bus
}

// diskBus returns the bus of whichever device kind the disk has.
func diskBus(disk *v1.Disk) v1.DiskBus {
	_, bus, _ := vocab.DiskDevice(disk)
	return bus
}
