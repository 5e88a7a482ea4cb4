package convert

import (
	"strconv"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// iothreads writes the IO threads the plan of spec.domain.ioThreadsPolicy
// gives (facts.ioThreads: <iothreads>, and each virtio disk's thread, which
// the disks area writes) and, for a VMI with dedicated CPUs, pins them as
// KubeVirt does (ioThreadPins). The supplementalPool policy lists every
// pool thread in each virtio disk's <driver><iothreads> (the disks area),
// and pins each pool thread to a host CPU of its own; it is refused where
// the host's libvirt lacks that form (libvirt 10.0 added it).
func (c *converter) iothreads(d *libvirtxml.Domain) error {
	if p := c.spec.Domain.IOThreadsPolicy; p != nil && *p == v1.IOThreadsPolicySupplementalPool && !c.opts.HostFacts.Has(LackDiskIOThreads) {
		return refuseLack(domainPath.Child("ioThreadsPolicy"), LackDiskIOThreads)
	}
	n := c.facts.ioThreads.total
	d.IOThreads = n
	pins := &c.facts.pins
	if !pins.dedicated || pins.short || n == 0 {
		return nil
	}
	tune := cpuTune(d)
	if c.facts.ioThreads.pool > 0 {
		for i, cpu := range pins.pool {
			tune.IOThreadPin = append(tune.IOThreadPin, libvirtxml.DomainCPUTuneIOThreadPin{IOThread: uint(i) + 1, CPUSet: strconv.FormatUint(uint64(cpu), 10)})
		}
		return nil
	}
	tune.IOThreadPin = ioThreadPins(pins, n, tune.IOThreadPin)
	return nil
}

// ioThreadPins appends to out the pins of n IO threads of a VMI with
// dedicated CPUs, as KubeVirt pins them: with an isolated emulator thread,
// IO thread 1 shares its host CPUs; otherwise the IO threads spread over the
// vCPUs' host CPUs (one CPU each when there are at least as many IO threads
// as vCPUs, else balanced ranges).
func ioThreadPins(pins *cpuPins, n uint, out []libvirtxml.DomainCPUTuneIOThreadPin) []libvirtxml.DomainCPUTuneIOThreadPin {
	host := pins.vcpus
	vcpus := uint(len(host))
	switch {
	case vcpus == 0: // a topology whose count overflows (api.Validate refuses it)
	case len(pins.emulator) > 0:
		out = append(out, libvirtxml.DomainCPUTuneIOThreadPin{IOThread: 1, CPUSet: cpuList(pins.emulator)})
	case n >= vcpus:
		for id := uint(1); id <= n; id++ {
			out = append(out, libvirtxml.DomainCPUTuneIOThreadPin{IOThread: id, CPUSet: strconv.FormatUint(uint64(host[id%vcpus]), 10)})
		}
	default:
		// e.g. 3 IO threads over 8 vCPUs: 0-2, 3-5, 6-7.
		first := uint(0)
		for id := uint(1); id <= n; id++ {
			size := vcpus / n
			if id <= vcpus%n {
				size++
			}
			out = append(out, libvirtxml.DomainCPUTuneIOThreadPin{IOThread: id, CPUSet: cpuList(host[first : first+size])})
			first += size
		}
	}
	return out
}
