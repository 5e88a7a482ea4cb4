package hostcaps

import (
	"strconv"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// numaCells reads the host's NUMA topology from its capabilities: each
// cell's memory, CPUs (with their socket, core and siblings) and distances.
func numaCells(caps *libvirtxml.Caps) []convert.NUMACell {
	if caps.Host.NUMA == nil || caps.Host.NUMA.Cells == nil {
		return nil
	}
	var out []convert.NUMACell
	for _, c := range caps.Host.NUMA.Cells.Cells {
		cell := convert.NUMACell{ID: uint(c.ID)}
		if c.Memory != nil {
			cell.MemoryKiB = kib(c.Memory.Size, c.Memory.Unit)
		}
		if c.CPUS != nil {
			for _, cpu := range c.CPUS.CPUs {
				out := convert.NUMACPU{ID: uint(cpu.ID), Siblings: cpuList(cpu.Siblings)}
				if cpu.SocketID != nil {
					out.Socket = uint(*cpu.SocketID)
				}
				if cpu.CoreID != nil {
					out.Core = uint(*cpu.CoreID)
				}
				cell.CPUs = append(cell.CPUs, out)
			}
		}
		if c.Distances != nil && len(c.Distances.Siblings) > 0 {
			cell.Distances = map[uint]uint{}
			for _, s := range c.Distances.Siblings {
				cell.Distances[uint(s.ID)] = uint(s.Value)
			}
		}
		out = append(out, cell)
	}
	return out
}

// kib converts a size in libvirt's unit (KiB unless it says otherwise) to
// KiB.
func kib(size uint64, unit string) uint64 {
	switch strings.ToLower(unit) {
	case "b", "bytes":
		return size / 1024
	case "m", "mib":
		return size << 10
	case "g", "gib":
		return size << 20
	}
	return size
}

// cpuList reads a libvirt CPU list ("0-3,8,10-11"); what is not a number
// or a range is skipped.
func cpuList(s string) []uint {
	var out []uint
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(strings.TrimSpace(part), "-")
		first, err := strconv.ParseUint(lo, 10, 32)
		if err != nil {
			continue
		}
		last := first
		if isRange {
			if last, err = strconv.ParseUint(hi, 10, 32); err != nil || last < first || last-first > 1<<16 {
				continue
			}
		}
		for id := first; id <= last; id++ {
			out = append(out, uint(id))
		}
	}
	return out
}
