package api

import (
	"fmt"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/internal/quantity"
	"github.com/vmi2libvirt/vmi2libvirt/internal/vcpumask"
	"github.com/vmi2libvirt/vmi2libvirt/internal/vocab"
)

// Limits of this library (not KubeVirt's admission): what no amd64 guest
// can be given, so that absurd quantities are refused with their path
// instead of wrapping around or failing in libvirt.
const (
	// MaxVCPUs is the most vCPUs (sockets*cores*threads, also with
	// maxSockets) a VMI may have: KubeVirt's hotplug cap.
	MaxVCPUs = maxHotplugVCPUs
	// MaxGuestMemory is the most guest memory (and maxGuest) a VMI may ask
	// for: 16Ti.
	MaxGuestMemory int64 = 16 << 40
)

// minMemoryRequest is KubeVirt's smallest memory request (1M).
var minMemoryRequest = resource.MustParse("1M")

// The paths of the memory and CPU fields every VMI is checked on, made once
// rather than on every check.
var (
	memReqPath   = resPath.Child("requests", "memory")
	memLimPath   = resPath.Child("limits", "memory")
	cpuReqPath   = resPath.Child("requests", "cpu")
	cpuLimPath   = resPath.Child("limits", "cpu")
	guestMemPath = memoryPath.Child("guest")
	numaPath     = cpuPath.Child("numa", "guestMappingPassthrough")
	dedPath      = cpuPath.Child("dedicatedCpuPlacement")
)

// validateMemory checks memory as KubeVirt does — a memory request that is
// not negative and at least 1M, a limit that is not negative and not below
// the request, some memory asked for (requests.memory, memory.guest or
// hugepages), a hugepage size that parses and divides the VM's memory —
// and, as this library's own limits, guest memory above zero and at most
// 16Ti, and maxGuest not below guest memory.
func validateMemory(vmi *v1.VirtualMachineInstance) field.ErrorList {
	var errs field.ErrorList
	d := &vmi.Spec.Domain
	reqPath, limPath := memReqPath, memLimPath
	req, hasReq := d.Resources.Requests[k8sv1.ResourceMemory]
	lim, hasLim := d.Resources.Limits[k8sv1.ResourceMemory]
	switch {
	case hasReq && req.Sign() < 0:
		errs = append(errs, field.Invalid(reqPath, req.String(), "must be greater than or equal to 0"))
	case hasReq && req.Sign() > 0 && req.Cmp(minMemoryRequest) < 0:
		errs = append(errs, field.Invalid(reqPath, req.String(), "must be greater than or equal to 1M"))
	}
	if hasLim && lim.Sign() < 0 {
		errs = append(errs, field.Invalid(limPath, lim.String(), "must be greater than or equal to 0"))
	}
	if hasLim && hasReq && lim.Sign() > 0 && req.Cmp(lim) > 0 {
		errs = append(errs, field.Invalid(reqPath, req.String(), "must not be greater than "+limPath.String()+" "+lim.String()))
	}
	if hasReq && req.CmpInt64(MaxGuestMemory) > 0 {
		errs = append(errs, field.Invalid(reqPath, req.String(), "must not be more than 16Ti"))
	}
	if hasLim && lim.CmpInt64(MaxGuestMemory) > 0 && !(hasReq && req.Cmp(lim) >= 0) {
		errs = append(errs, field.Invalid(limPath, lim.String(), "must not be more than 16Ti"))
	}
	m := d.Memory
	written := (hasReq && !req.IsZero()) || (hasLim && !lim.IsZero())
	if !written && (m == nil || (m.Guest == nil && m.Hugepages == nil)) {
		errs = append(errs, field.Required(memoryPath.Child("guest"),
			"no memory requested: set one of "+memoryPath.Child("guest").String()+", "+
				memoryPath.Child("hugepages", "pageSize").String()+" or "+reqPath.String()))
	}
	if m == nil {
		return errs
	}
	guestPath := guestMemPath
	if m.Guest != nil {
		switch {
		case m.Guest.Sign() <= 0:
			errs = append(errs, field.Invalid(guestPath, m.Guest.String(), "must be greater than 0"))
		case m.Guest.CmpInt64(MaxGuestMemory) > 0:
			errs = append(errs, field.Invalid(guestPath, m.Guest.String(), "must not be more than 16Ti"))
		}
	}
	if m.MaxGuest != nil {
		maxPath := memoryPath.Child("maxGuest")
		switch {
		case m.MaxGuest.CmpInt64(MaxGuestMemory) > 0:
			errs = append(errs, field.Invalid(maxPath, m.MaxGuest.String(), "must not be more than 16Ti"))
		case m.Guest != nil && quantityLess(*m.MaxGuest, *m.Guest):
			errs = append(errs, field.Invalid(maxPath, m.MaxGuest.String(), "must not be less than "+guestPath.String()+" "+m.Guest.String()))
		}
	}
	if m.Hugepages != nil {
		errs = append(errs, validateHugepages(vmi)...)
	}
	return errs
}

// validateHugepages checks that the hugepage size parses and that the VM's
// memory (request, else guest memory, else limit) is a multiple of it and
// not smaller; and, this library's own (libvirt takes page sizes in KiB),
// that it is a whole number of KiB.
func validateHugepages(vmi *v1.VirtualMachineInstance) field.ErrorList {
	d := &vmi.Spec.Domain
	pagePath := memoryPath.Child("hugepages", "pageSize")
	ps := d.Memory.Hugepages.PageSize
	if err := quantity.Check(ps); err != nil {
		return field.ErrorList{field.Invalid(pagePath, ps, err.Error())}
	}
	page, err := resource.ParseQuantity(ps)
	if err != nil {
		return field.ErrorList{field.Invalid(pagePath, ps, "not a quantity such as 2Mi or 1Gi")}
	}
	if page.Sign() <= 0 {
		return field.ErrorList{field.Invalid(pagePath, ps, "must be greater than 0")}
	}
	if n, exact := page.AsInt64(); !exact || n%1024 != 0 {
		return field.ErrorList{field.Invalid(pagePath, ps, "must be a whole number of KiB, such as 2Mi or 1Gi")}
	}
	// The memory the pages back, and the field it comes from.
	memPath := resPath.Child("requests", "memory")
	mem := d.Resources.Requests.Memory().Value()
	if mem == 0 && d.Memory.Guest != nil {
		mem, memPath = d.Memory.Guest.Value(), memoryPath.Child("guest")
	}
	if mem == 0 {
		mem, memPath = d.Resources.Limits.Memory().Value(), resPath.Child("limits", "memory")
	}
	switch {
	case mem == 0:
	case mem < page.Value():
		return field.ErrorList{field.Invalid(memPath, resource.NewQuantity(mem, resource.BinarySI).String(),
			"must be equal to or larger than the page size "+pagePath.String()+" "+ps)}
	case mem%page.Value() != 0:
		return field.ErrorList{field.Invalid(memPath, resource.NewQuantity(mem, resource.BinarySI).String(),
			"is not a multiple of the page size "+pagePath.String()+" "+ps)}
	}
	return nil
}

// vcpus counts a topology's vCPUs as KubeVirt does (unset parts count as
// 1, all unset as 0), in 64 bits.
func vcpus(sockets, cores, threads uint32) uint64 {
	n := uint64(0)
	for _, x := range []uint32{cores, sockets, threads} {
		switch {
		case x == 0:
		case n == 0:
			n = uint64(x)
		default:
			n *= uint64(x)
		}
	}
	return n
}

// validateCPU checks CPU resources and topology as KubeVirt does — CPU
// request and limit not negative and the request not above the limit,
// sockets within maxSockets, known CPU feature policies, the rules of
// dedicated CPU placement (integer and equal CPU request and limit that
// agree with the topology, memory request equal to the limit, at most two
// threads), isolateEmulatorThread, NUMA passthrough and realtime only with
// dedicated CPUs, NUMA passthrough only with hugepages — and, as this
// library's own limits, at most 512 vCPUs (also counting maxSockets and
// whole CPUs asked for in resources), CPU features named, once each
// (libvirt refuses a feature named twice; KubeVirt's admission lets it
// through) and a realtime mask that KubeVirt's virt-handler reads, naming
// only the VMI's vCPUs (validateRealtimeMask).
func validateCPU(vmi *v1.VirtualMachineInstance) field.ErrorList {
	var errs field.ErrorList
	d := &vmi.Spec.Domain
	reqPath, limPath := cpuReqPath, cpuLimPath
	req, hasReq := d.Resources.Requests[k8sv1.ResourceCPU]
	lim, hasLim := d.Resources.Limits[k8sv1.ResourceCPU]
	// A request equal to the limit mirrors it (Default copies the limit into
	// an unset request): its problems are reported on the limit only.
	mirror := hasReq && hasLim && req.Cmp(lim) == 0
	if hasReq && !mirror && req.Sign() < 0 {
		errs = append(errs, field.Invalid(reqPath, req.String(), "must be greater than or equal to 0"))
	}
	if hasLim && lim.Sign() < 0 {
		errs = append(errs, field.Invalid(limPath, lim.String(), "must be greater than or equal to 0"))
	}
	if hasReq && hasLim && lim.Sign() > 0 && req.Cmp(lim) > 0 {
		errs = append(errs, field.Invalid(reqPath, req.String(), "must not be greater than "+limPath.String()+" "+lim.String()))
	}
	if hasReq && !mirror && req.CmpInt64(MaxVCPUs) > 0 {
		errs = append(errs, field.Invalid(reqPath, req.String(), fmt.Sprintf("a VM cannot have more than %d vCPUs", MaxVCPUs)))
	}
	if hasLim && lim.CmpInt64(MaxVCPUs) > 0 {
		errs = append(errs, field.Invalid(limPath, lim.String(), fmt.Sprintf("a VM cannot have more than %d vCPUs", MaxVCPUs)))
	}
	c := d.CPU
	if c == nil {
		return errs
	}
	if n := vcpus(c.Sockets, c.Cores, c.Threads); n > MaxVCPUs {
		errs = append(errs, field.Invalid(cpuPath, fmt.Sprintf("sockets=%d cores=%d threads=%d", c.Sockets, c.Cores, c.Threads),
			fmt.Sprintf("%d vCPUs: a VM cannot have more than %d", n, MaxVCPUs)))
	}
	if c.MaxSockets != 0 {
		if c.Sockets > c.MaxSockets {
			errs = append(errs, field.Invalid(cpuPath.Child("sockets"), c.Sockets,
				fmt.Sprintf("must not be greater than %s (%d)", cpuPath.Child("maxSockets"), c.MaxSockets)))
		}
		// maxSockets is held to the limit only when the topology itself
		// is within it (else the error above says it all).
		if n := vcpus(c.MaxSockets, c.Cores, c.Threads); n > MaxVCPUs && vcpus(c.Sockets, c.Cores, c.Threads) <= MaxVCPUs {
			errs = append(errs, field.Invalid(cpuPath.Child("maxSockets"), c.MaxSockets,
				fmt.Sprintf("allows %d vCPUs: a VM cannot have more than %d", n, MaxVCPUs)))
		}
	}
	for i, f := range c.Features {
		fp := cpuPath.Child("features").Index(i)
		if f.Name == "" {
			errs = append(errs, field.Required(fp.Child("name"), "a CPU feature needs a name"))
		}
		for j := range i {
			if f.Name != "" && c.Features[j].Name == f.Name {
				errs = append(errs, field.Duplicate(fp.Child("name"), fmt.Sprintf("%s (also %s): libvirt refuses a CPU feature named twice",
					f.Name, cpuPath.Child("features").Index(j).Child("name"))))
				break
			}
		}
		if f.Policy != "" && !vocab.CPUFeaturePolicies.Has(f.Policy) {
			errs = append(errs, field.NotSupported(fp.Child("policy"), f.Policy, vocab.CPUFeaturePolicies))
		}
	}
	if c.IsolateEmulatorThread && !c.DedicatedCPUPlacement {
		errs = append(errs, field.Invalid(cpuPath.Child("isolateEmulatorThread"), true,
			"only allowed with "+cpuPath.Child("dedicatedCpuPlacement").String()+": true"))
	}
	passthrough := c.NUMA != nil && c.NUMA.GuestMappingPassthrough != nil
	if passthrough {
		if !c.DedicatedCPUPlacement {
			errs = append(errs, field.Invalid(numaPath, "{}", "needs "+cpuPath.Child("dedicatedCpuPlacement").String()+": true"))
		}
		if d.Memory == nil || d.Memory.Hugepages == nil {
			errs = append(errs, field.Invalid(numaPath, "{}", "needs "+memoryPath.Child("hugepages").String()))
		}
	}
	if c.Realtime != nil {
		if !c.DedicatedCPUPlacement {
			errs = append(errs, field.Required(cpuPath.Child("dedicatedCpuPlacement"), "must be true when "+cpuPath.Child("realtime").String()+" is used"))
		}
		if !passthrough {
			errs = append(errs, field.Required(numaPath, "must be set when "+cpuPath.Child("realtime").String()+" is used"))
		}
		errs = append(errs, validateRealtimeMask(c)...)
	}
	if c.DedicatedCPUPlacement {
		errs = append(errs, validateDedicatedCPUs(vmi)...)
	}
	return errs
}

// validateRealtimeMask holds spec.domain.cpu.realtime.mask, as this
// library's own rule, to what KubeVirt's virt-handler reads
// (internal/vcpumask; KubeVirt's admission does not look at the mask, and
// its handler fails to start a VMI whose mask it cannot read) and to the
// VMI's vCPUs (up to maxSockets'): KubeVirt's handler ignores a vCPU the
// VMI does not have, which libvirt refuses, and a mask that names one is
// taken for a mistake rather than dropped silently.
func validateRealtimeMask(c *v1.CPU) field.ErrorList {
	maskPath := cpuPath.Child("realtime", "mask")
	mask := c.Realtime.Mask
	m, err := vcpumask.Parse(mask)
	if err != nil {
		return field.ErrorList{field.Invalid(maskPath, mask, err.Error())}
	}
	n := vcpus(max(c.Sockets, c.MaxSockets), c.Cores, c.Threads)
	if !m.All() && n > 0 && m.Highest() >= n {
		return field.ErrorList{field.Invalid(maskPath, mask, fmt.Sprintf("names vCPU %d; the VMI's vCPUs are 0-%d", m.Highest(), n-1))}
	}
	return nil
}

// validateDedicatedCPUs applies KubeVirt's rules for dedicated CPU
// placement.
func validateDedicatedCPUs(vmi *v1.VirtualMachineInstance) field.ErrorList {
	var errs field.ErrorList
	d := &vmi.Spec.Domain
	c := d.CPU
	reqPath, limPath := cpuReqPath, cpuLimPath
	res := &d.Resources
	memReq, memLim := res.Requests.Memory(), res.Limits.Memory()
	if memLim.IsZero() && memReq.IsZero() && (d.Memory == nil || (d.Memory.Hugepages == nil && (d.Memory.Guest == nil || d.Memory.Guest.IsZero()))) {
		errs = append(errs, field.Required(resPath.Child("limits", "memory"), "dedicated CPUs need memory: set "+
			resPath.Child("requests", "memory").String()+", "+resPath.Child("limits", "memory").String()+", "+
			memoryPath.Child("hugepages").String()+" or "+memoryPath.Child("guest").String()))
	}
	cpuReq, cpuLim := res.Requests.Cpu(), res.Limits.Cpu()
	if cpuReq.Value() > 0 && cpuReq.Value()*1000 != cpuReq.MilliValue() && cpuReq.Cmp(*cpuLim) != 0 {
		errs = append(errs, field.Invalid(reqPath, cpuReq.String(), "must be a whole number of CPUs with dedicated CPUs"))
	}
	if cpuLim.Value() > 0 && cpuLim.Value()*1000 != cpuLim.MilliValue() {
		errs = append(errs, field.Invalid(limPath, cpuLim.String(), "must be a whole number of CPUs with dedicated CPUs"))
	}
	if memReq.Value() > 0 && memLim.Value() > 0 && memReq.Value() != memLim.Value() {
		errs = append(errs, field.Invalid(resPath.Child("requests", "memory"), memReq.String(),
			"must be equal to "+resPath.Child("limits", "memory").String()+" with dedicated CPUs"))
	}
	n := int64(vcpus(c.Sockets, c.Cores, c.Threads))
	if cpuReq.Value() == 0 && cpuLim.Value() == 0 && n == 0 {
		errs = append(errs, field.Required(dedPath, "dedicated CPUs need "+reqPath.String()+", "+limPath.String()+" or "+cpuPath.Child("cores").String()))
	}
	if cpuReq.Value() > 0 && cpuLim.Value() > 0 && cpuReq.Value() != cpuLim.Value() {
		errs = append(errs, field.Invalid(reqPath, cpuReq.String(), "must be equal to "+limPath.String()+" with dedicated CPUs"))
	}
	if (cpuReq.Value() > 0 || cpuLim.Value() > 0) && n > 0 && cpuReq.Value() != n && cpuLim.Value() != n {
		errs = append(errs, field.Invalid(dedPath, true, fmt.Sprintf("the CPU request or limit must match the %d vCPUs of %s with dedicated CPUs", n, cpuPath)))
	}
	if c.Threads > 2 {
		errs = append(errs, field.Invalid(cpuPath.Child("threads"), c.Threads, "at most 2 threads with dedicated CPUs"))
	}
	return errs
}

// quantityLess reports whether a < b without touching the quantities the
// caller holds: Quantity.Cmp turns its receiver into the decimal form when
// either side has it (such as "1.5Gi"), after which AsInt64 no longer reports
// it exact and the converter, like KubeVirt, takes a byte less.
func quantityLess(a, b resource.Quantity) bool {
	a = a.DeepCopy()
	return a.Cmp(b) < 0
}
