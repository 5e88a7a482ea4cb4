package api

import (
	"math"

	k8sv1 "k8s.io/api/core/v1"
	v1 "kubevirt.io/api/core/v1"
)

// defaultCPURequest copies the CPU limit into the CPU request when only the
// limit is set. (KubeVirt's cluster-wide default CPU request, 100m, is not
// written into the VMI when it is the default.)
func defaultCPURequest(vmi *v1.VirtualMachineInstance, _ ClusterConfig) {
	res := &vmi.Spec.Domain.Resources
	limit, ok := res.Limits[k8sv1.ResourceCPU]
	if !ok || limit.IsZero() {
		return
	}
	if req, ok := res.Requests[k8sv1.ResourceCPU]; ok && !req.IsZero() {
		return
	}
	if res.Requests == nil {
		res.Requests = k8sv1.ResourceList{}
	}
	res.Requests[k8sv1.ResourceCPU] = limit
}

// defaultCPUTopology gives a VMI that sets none of sockets, cores and
// threads one core and one thread per socket and as many sockets as its CPU
// limit, else its CPU request, asks for (rounded up; 1 without either, or
// when that amount is below 1 or above MaxVCPUs).
func defaultCPUTopology(vmi *v1.VirtualMachineInstance, _ ClusterConfig) {
	d := &vmi.Spec.Domain
	if d.CPU != nil && (d.CPU.Sockets != 0 || d.CPU.Cores != 0 || d.CPU.Threads != 0) {
		return
	}
	if d.CPU == nil {
		d.CPU = &v1.CPU{}
	}
	sockets := uint32(1)
	q, ok := d.Resources.Limits[k8sv1.ResourceCPU]
	if !ok {
		q, ok = d.Resources.Requests[k8sv1.ResourceCPU]
	}
	// A negative or absurd amount (which Validate refuses on its own path)
	// must not wrap around into a topology the user never wrote.
	if v := q.Value(); ok && v >= 1 && v <= MaxVCPUs {
		sockets = uint32(v)
	}
	d.CPU.Sockets, d.CPU.Cores, d.CPU.Threads = sockets, 1, 1
}

// defaultCPUModel sets the cluster's CPU model (host-model by default) on a
// VMI that names none.
func defaultCPUModel(vmi *v1.VirtualMachineInstance, cfg ClusterConfig) {
	d := &vmi.Spec.Domain
	if d.CPU == nil {
		d.CPU = &v1.CPU{}
	}
	if d.CPU.Model == "" {
		d.CPU.Model = cfg.cpuModel()
	}
}

// defaultCPUTopologyStatus records the topology the VMI boots with in
// status.currentCPUTopology, as KubeVirt does.
func defaultCPUTopologyStatus(vmi *v1.VirtualMachineInstance, _ ClusterConfig) {
	c := vmi.Spec.Domain.CPU
	if c == nil || vmi.Status.CurrentCPUTopology != nil {
		return
	}
	vmi.Status.CurrentCPUTopology = &v1.CPUTopology{Sockets: c.Sockets, Cores: c.Cores, Threads: c.Threads}
}

// defaultCPUHotplug sets the CPU-socket hotplug maximum under the LiveUpdate
// rollout strategy: the cluster's maxCpuSockets (raised to the VMI's
// sockets), else sockets times the hotplug ratio, capped so that
// maxSockets*cores*threads stays within 512 vCPUs but never below sockets.
func defaultCPUHotplug(vmi *v1.VirtualMachineInstance, cfg ClusterConfig) {
	c := vmi.Spec.Domain.CPU
	if !cfg.liveUpdate() || c == nil || c.MaxSockets != 0 {
		return
	}
	if maxSockets := cfg.MaxCPUSockets; maxSockets != 0 {
		c.MaxSockets = max(maxSockets, c.Sockets)
		return
	}
	// Computed in 64 bits: absurd socket counts must not wrap around.
	maxSockets := uint64(c.Sockets) * uint64(cfg.hotplugRatio())
	perSocket := uint64(max(c.Cores, 1)) * uint64(max(c.Threads, 1)) // unset counts as 1
	if maxSockets*perSocket > maxHotplugVCPUs {
		maxSockets = max(maxHotplugVCPUs/perSocket, uint64(c.Sockets))
	}
	c.MaxSockets = uint32(min(maxSockets, math.MaxUint32))
}
