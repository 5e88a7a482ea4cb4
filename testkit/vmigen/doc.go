// Package vmigen makes random KubeVirt VirtualMachineInstances for
// property tests: seeded and deterministic (the same Config and index give
// the same VMI, byte for byte once marshalled, on any machine), pure (no
// I/O), and valid by construction — api.Validate accepts every VMI it
// makes once api.Default has run, as KubeVirt's admission does (a VMI it
// makes that api refuses is a bug in one of them).
//
//	c := vmigen.Generate(vmigen.Config{Seed: 1, Layout: vmigen.HostLayout}, 42)
//	api.Default(c.VMI, api.ClusterConfig{})
//	d, err := convert.Convert(c.VMI, c.Options) // c.Options maps its claims, networks, host devices
//
// Each area of a VMI is drawn with weights, so that combinations appear:
// memory (requests, limits, guest, hugepages, maxGuest), CPUs (topology,
// resources, dedicated placement within the Options' CPU set, isolated
// emulator thread, model, features, maxSockets), firmware (BIOS, EFI with
// and without secure boot and persistent variables, kernel boot, uuid,
// serial, chassis, machine type), features (ACPI, APIC with end of
// interrupt, SMM, every Hyper-V enlightenment with its dependencies,
// Hyper-V passthrough, KVM hidden, pvspinlock), the clock (utc, offsets,
// time zones, timers and tick policies), disks, CD-ROMs and LUNs on every
// bus their kind allows with their options (serial, boot order, cache, io,
// error policy, shareable, dedicated IO thread, block sizes, tags, PCI
// addresses, trays, read-only), every volume source (containerDisk, PVC,
// DataVolume, ephemeral, emptyDisk, hostDisk, cloud-init NoCloud and
// ConfigDrive, configMap, secret, downwardAPI, serviceAccount, sysprep,
// downwardMetrics), virtiofs filesystems on the sources KubeVirt shares
// (PVC, DataVolume, configMap, secret, downwardAPI, serviceAccount; in the
// host layout their claims are folders), interfaces and networks (pod with masquerade or
// bridge, multus default and secondary networks, SR-IOV, models, MACs, PCI
// addresses, boot orders, ACPI indexes, link states, ports, DHCP options),
// the other devices (tablets, watchdog, RNG, TPM, sound, video, panic
// devices, USB redirection, the downward metrics channel, the autoattach switches, virtio options, GPUs
// and host devices), IO-thread policies, the annotations the converter
// reads, and the scheduling and lifecycle fields it accepts.
//
// Two profiles: Supported draws what the project converts today (every
// such VMI converts with its Case's Options); KubeVirt adds what KubeVirt
// admits and converts but the project refuses today, and names each such
// field in Case.Refusable. Two layouts: KubeVirtLayout (Options are
// convert.KubeVirtOptions()) and HostLayout (a plain Debian 12 host, with
// every claim, multus network, hostDisk folder and host device mapped).
// Forms the converter gets wrong are listed in KnownBugs (none today).
//
// Left out of both profiles: fields that only a cluster can honour and
// that the project refuses by design (probes, access credentials, resource
// claims, utility volumes, binding plugins, the passt binding, launch
// security, ACPI tables from secrets, Ignition, image pull secrets, hot-
// plugged and memory-dump volumes, containerPath volumes, changed block
// tracking, matchVolume block sizes); the discontinued bindings; and
// status fields (a VMI as a user writes it has none).
//
// The properties over the generated VMIs are this package's tests
// (TestProperties); those that need libvirtd and the test guest are in
// testkit/vmigen/e2e. Command vmigen (cmd/vmigen) writes VMIs to a folder
// as YAML, for kvdiff and other tools.
package vmigen
