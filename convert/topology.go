package convert

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
