package convert

import (
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// ioThreadPlan is how a VMI's disks share QEMU IO threads, as KubeVirt plans
// them: IO threads 1…shared are shared round-robin by the virtio disks
// without a dedicated thread, and each disk with dedicatedIOThread gets one
// of the following ids.
//
// KubeVirt's supplementalPool policy maps every queue of every virtio disk
// to a pool of threads (<driver><iothreads><iothread id=…>), which needs
// libvirt 10.0; libvirt 9.0's schema has no such element, so the policy is
// refused.
type ioThreadPlan struct {
	total  uint // the domain's <iothreads>; 0 leaves IO threads off
	shared uint // threads 1…shared are shared round-robin
}

var ioThreadsPolicies = []string{
	string(v1.IOThreadsPolicyShared),
	string(v1.IOThreadsPolicyAuto),
	string(v1.IOThreadsPolicySupplementalPool),
}

// ioThreadPlan computes the plan from spec.domain.ioThreadsPolicy,
// spec.domain.ioThreads and the disks' dedicatedIOThread.
func (c *converter) ioThreadPlan() (ioThreadPlan, error) {
	dom := &c.spec.Domain
	policy := dom.IOThreadsPolicy
	if dom.IOThreads != nil && (policy == nil || *policy != v1.IOThreadsPolicySupplementalPool) {
		return ioThreadPlan{}, field.Invalid(domainPath.Child("ioThreads"), dom.IOThreads,
			"only used with ioThreadsPolicy supplementalPool")
	}
	dedicated, others := uint(0), uint(0)
	for i := range dom.Devices.Disks {
		if hasDedicatedIOThread(&dom.Devices.Disks[i]) {
			dedicated++
		} else {
			others++
		}
	}
	if policy == nil {
		if dedicated == 0 {
			return ioThreadPlan{}, nil
		}
		return sharedPlan(dedicated, others, 1), nil
	}
	switch *policy {
	case v1.IOThreadsPolicyShared:
		return sharedPlan(dedicated, others, 1), nil
	case v1.IOThreadsPolicyAuto:
		return sharedPlan(dedicated, others, c.autoThreadLimit()), nil
	case v1.IOThreadsPolicySupplementalPool:
		countPath := poolThreadCountPath
		if dom.IOThreads == nil || dom.IOThreads.SupplementalPoolThreadCount == nil {
			return ioThreadPlan{}, field.Required(countPath, "the supplementalPool policy needs a thread count")
		}
		if n := *dom.IOThreads.SupplementalPoolThreadCount; n < 1 {
			return ioThreadPlan{}, field.Invalid(countPath, n, "must be at least 1")
		}
		return ioThreadPlan{}, field.Forbidden(domainPath.Child("ioThreadsPolicy"),
			"supplementalPool maps disk queues to IO threads (<driver><iothreads>), which libvirt 9.0 does not have")
	}
	return ioThreadPlan{}, field.NotSupported(domainPath.Child("ioThreadsPolicy"), *policy, ioThreadsPolicies)
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
func (c *converter) autoThreadLimit() uint {
	cpu := c.spec.Domain.CPU
	if cpu != nil && cpu.DedicatedCPUPlacement && cpu.IsolateEmulatorThread {
		return 1
	}
	cpus := int64(1)
	res := c.spec.Domain.Resources
	if q, ok := res.Requests[k8sv1.ResourceCPU]; ok {
		cpus = q.Value()
	} else if q, ok := res.Limits[k8sv1.ResourceCPU]; ok {
		cpus = q.Value()
	}
	return uint(max(cpus, 0)) * 2
}

func hasDedicatedIOThread(disk *v1.Disk) bool {
	return disk.DedicatedIOThread != nil && *disk.DedicatedIOThread
}

// iothreads writes the domain's <iothreads> count and, for a VMI with
// dedicated CPUs, pins the IO threads (pinIOThreads, in the cpu area's file).
func (c *converter) iothreads(d *libvirtxml.Domain) error {
	if c.ioThreadsErr != nil {
		return c.ioThreadsErr
	}
	d.IOThreads = c.ioThreads.total
	c.pinIOThreads(d)
	return nil
}

// ioThreadAssigner hands out the IO thread of each virtio disk, in spec
// order, following a plan.
type ioThreadAssigner struct {
	plan      ioThreadPlan
	nextAuto  uint
	nextFixed uint
}

func newIOThreadAssigner(plan ioThreadPlan) ioThreadAssigner {
	return ioThreadAssigner{plan: plan, nextAuto: 1, nextFixed: plan.shared + 1}
}

// assign sets the IO thread of a virtio disk's driver, keeping its id in
// *id.
func (a *ioThreadAssigner) assign(disk *v1.Disk, driver *libvirtxml.DomainDiskDriver, id *uint) {
	switch {
	case a.plan.total == 0:
	case hasDedicatedIOThread(disk):
		*id = a.nextFixed
		driver.IOThread = id
		a.nextFixed++
	default:
		*id = a.nextAuto
		driver.IOThread = id
		a.nextAuto = a.nextAuto%a.plan.shared + 1
	}
}
