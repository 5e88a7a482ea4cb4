package convert

import (
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/internal/vcpumask"
)

// realtimePlan is what spec.domain.cpu.realtime gives a VMI, as KubeVirt
// gives it. KubeVirt's admission (and api.Validate) takes realtime only
// with dedicated CPUs and NUMA guest mapping passthrough, which converts
// only with the host's NUMA cells (Options.HostFacts.NUMA; without them
// the cpu area refuses the passthrough at its field). Then:
//
//   - the features area turns the guest's PMU off (<pmu state="off"/>), as
//     KubeVirt's converter does for a realtime VMI with dedicated CPUs;
//   - the memory area forbids merging the guest's pages (<nosharepages/>)
//     where the NUMA mapping gives each cell its hugepages, as KubeVirt's
//     numaMapping does for a realtime VMI;
//   - the cpu area gives the vCPUs the mask names (all without a mask)
//     the SCHED_FIFO policy at priority 1 (<vcpusched>).
//
// The last is not in KubeVirt's domain: its virt-handler sets the vCPU
// threads' policy itself once QEMU runs (configureVCPUScheduler: FIFO,
// priority 1, for each vCPU thread the mask names), so that virt-launcher
// needs no CAP_SYS_NICE. Here nothing but libvirt sits between the VMI
// and QEMU, and libvirt does the same for <vcpusched> when it starts the
// vCPUs (libvirt 9.0 defines it, and the vCPU threads of a domain started
// paused are SCHED_FIFO at priority 1: TestE2ERealtime), before the guest
// runs, where KubeVirt's handler sets them shortly after QEMU starts. Both
// need a host that lets the threads' cgroup have realtime tasks (KubeVirt
// labels a node realtime when kernel.sched_rt_runtime_us is -1); where it
// does not, libvirt fails to start the domain, and KubeVirt's handler to
// set the policy.
// The domain names the vCPUs one element each, in the form libvirt reads
// back (one <vcpusched> per vCPU), never the mask itself: KubeVirt reads
// the mask its own way (internal/vcpumask), which libvirt's bitmaps do
// not share ("^1,0-3" is 0, 2 and 3 in KubeVirt, 0-3 in libvirt). Only
// the booted vCPUs are named: KubeVirt's handler schedules the vCPU
// threads there are when the VMI starts, not those plugged in later.
// (api.Validate refuses a mask KubeVirt cannot read, or that names a vCPU
// the VMI does not have; such a mask, unvalidated, schedules no vCPU.)
//
// Two more of virt-handler's settings for a realtime VMI have nothing to
// write: it raises QEMU's memlock limit, which locks no memory, and which
// libvirt raises itself where a domain's memory must be locked (VFIO,
// <locked/>); and it gives the kvm-pit kernel thread FIFO at priority 2
// (pinned with vCPU 0 for dedicated CPUs), which is no thread of QEMU's
// and which no domain element reaches.
type realtimePlan struct {
	// on tells that the VMI asks for realtime.
	on bool
	// vcpus are the booted vCPUs that get SCHED_FIFO.
	vcpus []uint
}

// realtimePriority is the SCHED_FIFO priority of realtime vCPUs,
// KubeVirt's.
const realtimePriority = 1

// planRealtime plans realtime for a VMI booting booted vCPUs.
func planRealtime(vmi *v1.VirtualMachineInstance, booted uint) realtimePlan {
	cpu := vmi.Spec.Domain.CPU
	if cpu == nil || cpu.Realtime == nil {
		return realtimePlan{}
	}
	plan := realtimePlan{on: true}
	mask, err := vcpumask.Parse(cpu.Realtime.Mask)
	if err != nil {
		return plan
	}
	for id := range booted {
		if mask.Names(uint64(id)) {
			plan.vcpus = append(plan.vcpus, id)
		}
	}
	return plan
}

// vcpuSched are the <vcpusched> elements of the plan's vCPUs (none
// without realtime).
func (p *realtimePlan) vcpuSched(t *text) []libvirtxml.DomainCPUTuneVCPUSched {
	if len(p.vcpus) == 0 {
		return nil
	}
	sched := make([]libvirtxml.DomainCPUTuneVCPUSched, len(p.vcpus))
	priority := new(int) // the domain's own: its caller may change it
	*priority = realtimePriority
	for i, id := range p.vcpus {
		sched[i] = libvirtxml.DomainCPUTuneVCPUSched{VCPUs: t.decimal(uint64(id)), Scheduler: "fifo", Priority: priority}
	}
	return sched
}
