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
// reports every such field, not only the first, as an *Error (a
// field.ErrorList in the order of the areas; errors.As finds each
// *field.Error).
//
// Convert runs on every reconcile, so it allocates little: field paths
// are made once at package level (or only for a refusal), and the small
// structs a device points to are allocated together (diskParts,
// consoleParts). TestAllocsPerStage (internal/pipeline) pins the counts.
package convert
