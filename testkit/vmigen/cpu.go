package vmigen

import (
	"strconv"

	k8sv1 "k8s.io/api/core/v1"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// cpuModels are the named CPU models drawn: QEMU 7.2's, so that libvirt
// defines them.
var cpuModels = []string{
	"Skylake-Client-IBRS", "Haswell-noTSX", "Cascadelake-Server", "Icelake-Server",
	"EPYC", "EPYC-Rome", "Nehalem", "Westmere", "SandyBridge", "IvyBridge",
	"Broadwell-noTSX", "Penryn", "qemu64",
}

// cpuFeatures are the CPU feature names drawn, and cpuPolicies the
// policies (empty: libvirt's default, require).
var (
	cpuFeatures = []string{"pcid", "ssbd", "md-clear", "spec-ctrl", "invtsc", "avx2", "x2apic", "aes", "pdpe1gb", "vmx", "hypervisor", "arat"}
	cpuPolicies = []string{"", "force", "require", "optional", "disable", "forbid"}
)

// cpuAndMemory draws the vCPUs (topology, resources, dedicated placement,
// model, features) and the memory.
func (g *gen) cpuAndMemory() {
	g.ioThreadsPolicy()
	g.dedicated = g.p(0.08)
	g.hugepages = g.p(0.1) || g.dedicated && g.p(0.3)
	if g.dedicated {
		g.dedicatedCPUs()
	} else {
		g.sharedCPUs()
	}
	g.cpuModel()
	g.memory()
}

// memoryOnly draws the memory of a VMI whose CPU area is skipped.
func (g *gen) memoryOnly() {
	g.memory()
}

// cpu returns the VMI's spec.domain.cpu, made when missing.
func (g *gen) cpu() *v1.CPU {
	d := &g.spec.Domain
	if d.CPU == nil {
		d.CPU = &v1.CPU{}
	}
	return d.CPU
}

// setCPUResource sets the CPU request and/or limit.
func (g *gen) setCPUResource(req, lim string) {
	res := &g.spec.Domain.Resources
	if req != "" {
		if res.Requests == nil {
			res.Requests = k8sv1.ResourceList{}
		}
		res.Requests[k8sv1.ResourceCPU] = q(req)
	}
	if lim != "" {
		if res.Limits == nil {
			res.Limits = k8sv1.ResourceList{}
		}
		res.Limits[k8sv1.ResourceCPU] = q(lim)
	}
}

// sharedCPUs draws vCPUs without dedicated placement: none said (one
// vCPU), CPU resources only (as many sockets as they ask for), or a
// topology, with a CPU-socket hotplug maximum at times.
func (g *gen) sharedCPUs() {
	switch pickW(g, weighted[string]{3, "none"}, weighted[string]{3, "resources"}, weighted[string]{5, "topology"}) {
	case "none":
	case "resources":
		req := pick(g, "100m", "500m", "1", "2", "3")
		lim := ""
		if g.p(0.4) {
			lim = pick(g, "2", "4")
			if l, r := q(lim), q(req); l.Cmp(r) < 0 {
				lim = req
			}
		}
		if g.p(0.2) {
			req = "" // only the limit: Default copies it into the request
			if lim == "" {
				lim = "2"
			}
		}
		g.setCPUResource(req, lim)
	case "topology":
		c := g.cpu()
		if g.p(0.7) {
			c.Sockets = uint32(g.n(1, 4))
		}
		if g.p(0.6) {
			c.Cores = uint32(g.n(1, 4))
		}
		if g.p(0.3) {
			c.Threads = uint32(g.n(1, 2))
		}
		if c.Sockets == 0 && c.Cores == 0 && c.Threads == 0 {
			c.Cores = 1
		}
		if c.Sockets != 0 && g.p(0.15) {
			c.MaxSockets = c.Sockets + uint32(g.n(0, 4))
		}
		if g.p(0.3) {
			g.setCPUResource(pick(g, "100m", "1", "2"), "")
		}
	}
}

// dedicatedCPUs draws dedicated CPU placement within the host CPUs the
// Options give: vCPUs, an isolated emulator thread (two CPUs for it when
// the even-parity annotation asks and the count is even), and in the
// KubeVirt profile a supplemental IO-thread pool, each pinned to a CPU of
// its own. The CPU request and limit, when set, are whole and equal to the
// vCPU count, as KubeVirt requires.
func (g *gen) dedicatedCPUs() {
	c := g.cpu()
	c.DedicatedCPUPlacement = true
	budget := g.dedicatedBudget()
	reserved := uint(0)
	if g.p(0.4) {
		c.IsolateEmulatorThread = true
		reserved++
		if g.p(0.3) {
			g.annotate(v1.EmulatorThreadCompleteToEvenParity, "")
			reserved++
		}
	}
	if t := g.spec.Domain.IOThreads; t != nil && t.SupplementalPoolThreadCount != nil {
		reserved += uint(*t.SupplementalPoolThreadCount)
	}
	n := uint(g.n(1, int(budget-reserved)))
	g.vcpus = n
	count := strconv.Itoa(int(n))
	switch pickW(g, weighted[string]{5, "topology"}, weighted[string]{2, "resources"}) {
	case "topology":
		threads := 1
		if n%2 == 0 && g.p(0.4) {
			threads = 2
		}
		sockets := 1
		if rest := int(n) / threads; rest%2 == 0 && g.p(0.3) {
			sockets = 2
		}
		c.Sockets, c.Cores, c.Threads = uint32(sockets), uint32(int(n)/threads/sockets), uint32(threads)
		if g.p(0.6) {
			g.setCPUResource(count, count)
		}
	case "resources":
		// No topology: Default gives n sockets of one core.
		g.setCPUResource(count, count)
	}
}

// ioThreadsPolicy draws how disks share IO threads: unset (the most
// often), shared, auto, and in the KubeVirt profile a supplemental pool of
// one or two threads (which a VMI with dedicated CPUs pins to CPUs of
// their own).
func (g *gen) ioThreadsPolicy() {
	d := &g.spec.Domain
	switch pickW(g, weighted[string]{15, ""}, weighted[string]{2, "shared"}, weighted[string]{2, "auto"}, weighted[string]{1, "pool"}) {
	case "shared":
		d.IOThreadsPolicy = ptr(v1.IOThreadsPolicyShared)
	case "auto":
		d.IOThreadsPolicy = ptr(v1.IOThreadsPolicyAuto)
	case "pool":
		if !g.kv {
			return
		}
		n := uint32(g.n(1, 2))
		d.IOThreadsPolicy = ptr(v1.IOThreadsPolicySupplementalPool)
		d.IOThreads = &v1.DiskIOThreads{SupplementalPoolThreadCount: &n}
		g.beyondWhereLacked(domainPath.Child("ioThreadsPolicy"), convert.LackDiskIOThreads)
	}
}

// cpuModel draws the CPU model and features (none for most VMIs:
// host-model).
func (g *gen) cpuModel() {
	switch pickW(g, weighted[string]{10, ""}, weighted[string]{3, v1.CPUModeHostModel},
		weighted[string]{3, v1.CPUModeHostPassthrough}, weighted[string]{4, "named"}) {
	case "":
	case "named":
		g.cpu().Model = pick(g, cpuModels...)
	case v1.CPUModeHostModel:
		g.cpu().Model = v1.CPUModeHostModel
	case v1.CPUModeHostPassthrough:
		g.cpu().Model = v1.CPUModeHostPassthrough
	}
	if g.p(0.25) {
		c := g.cpu()
		taken := map[string]bool{}
		for range g.n(1, 3) {
			name := pick(g, cpuFeatures...)
			if taken[name] { // api refuses a CPU feature named twice
				continue
			}
			taken[name] = true
			c.Features = append(c.Features, v1.CPUFeature{Name: name, Policy: pick(g, cpuPolicies...)})
		}
	}
}
