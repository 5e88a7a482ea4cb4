// Package convert turns a defaulted, validated KubeVirt VirtualMachineInstance
// into a libvirt domain.
//
// Convert is pure: it reads nothing from the host, the environment, the clock
// or randomness. Everything that depends on the host (where disks live, how
// interfaces attach, firmware paths, SMBIOS strings, CPU sets, whether KVM is
// used) comes in through Options and its Layout. The same VMI and Options give
// byte-identical XML on any machine.
//
// Each area of the domain is built by one function in its own file (cpu.go,
// memory.go, os.go, features.go, clock.go, disks.go, interfaces.go, ...).
// A VMI field that the converter does not honour is refused with a
// *field.Error naming its path; nothing is dropped silently. Convert
// reports every such field, not only the first, as an *api.InvalidError
// (its Errors in the order of the areas; errors.As finds each
// *field.Error).
//
// # Cost
//
// Convert runs on every reconcile, so it allocates little, and what it
// allocates is sized to what the VMI uses: with a dozen allocations left,
// the bytes are what bring the next garbage collection closer, and the
// collector's work is most of what a conversion costs. So:
//
//   - The domain and the parts of it that nearly every VMI has (its memory,
//     CPU, OS, features, controllers, console, graphics...) are one
//     allocation, domainParts (parts.go); an area points the domain into it
//     (d.CPU = &p.cpu). Parts only some VMIs have (a clock, Hyper-V, EFI,
//     hugepages, a TPM...) are allocated by their area when it needs them,
//     each area's in one piece (clockParts, hypervParts, efiParts...).
//   - A device list is allocated once with the length of the VMI's list,
//     and what its items point to in one slice of per-item structs
//     (diskParts, interfaceParts); what only some items have (a backing
//     store, a SCSI address) is allocated for those alone.
//   - The strings a conversion builds (the domain's name, device aliases)
//     are slices of one buffer (text.go), disk target names come from a
//     table, and the paths KubeVirtLayout.Paths gives share one string.
//   - Field paths are made for a refusal only (itemPath); the areas build
//     no maps; the facts several areas need (the IO-thread plan, the
//     virtio model, the layout's paths) are worked out once, when the
//     converter starts.
//   - The converter lives on Convert's stack: Convert calls the areas in
//     turn rather than through a table of functions.
//
// TestAllocsPerStage (internal/pipeline) pins the allocations and the
// bytes of a conversion of every sample VMI. BenchmarkOutputFloor measures
// the least any conversion into libvirtxml's types can cost: allocating,
// in one piece, the memory its domain reaches, and nothing else.
package convert
