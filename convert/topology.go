package convert

import (
	k8sv1 "k8s.io/api/core/v1"
)

// vcpus returns the number of vCPUs the guest starts with: sockets × cores ×
// threads of the (defaulted) spec.domain.cpu, at least 1.
func (c *converter) vcpus() uint {
	cpu := c.spec.Domain.CPU
	if cpu == nil {
		return 1
	}
	n := uint(max(cpu.Sockets, 1)) * uint(max(cpu.Cores, 1)) * uint(max(cpu.Threads, 1))
	return n
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
func (c *converter) cpuTopology() topology {
	t := topology{sockets: 1, cores: 1, threads: 1}
	cpu := c.spec.Domain.CPU
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
		res := c.spec.Domain.Resources
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
