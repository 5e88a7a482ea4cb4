// Package convert turns a defaulted, validated KubeVirt VirtualMachineInstance
// into a libvirt domain.
//
// Convert is pure: it reads nothing from the host, the environment, the clock
// or randomness. Everything that depends on the host (where disks live, how
// interfaces attach, firmware paths, SMBIOS strings, CPU sets, whether KVM is
// used) comes in through Options and its Layout. The same VMI and Options give
// byte-identical XML on any machine.
//
// # Areas and facts
//
// Each area of the domain is built by one function in its own file (cpu.go,
// memory.go, os.go, features.go, clock.go, disks.go, interfaces.go, ...)
// from the VMI, the options and the facts several areas need, worked out
// once before any area runs (facts.go: the CPU topology, the virtio model,
// the guest memory and whether it is a memfd, the IO-thread plan, the host
// CPUs of dedicated vCPUs). An area writes only its own elements and calls
// no other area's function; the generic helpers are in helpers.go, the
// strings the areas build in text.go. So where a VMI field becomes XML is
// one area's file and facts.go: spec.domain.ioThreadsPolicy is planned in
// facts.go and written (<iothreads>, <iothreadpin>) by iothreads.go.
//
// # What Convert refuses
//
// api.Validate is the one source of the rules of a VMI alone (KubeVirt's
// admission, and this library's own), and every vocabulary (disk buses,
// video types, NIC models...) is declared once, in internal/vocab, which
// both packages read. Convert does not check those rules again: given a VMI
// that api.Validate refuses, it does not panic, and may give a domain.
// Convert refuses only what depends on the host (Options.HostFacts: what
// its libvirt and QEMU can give; the zero facts are KubeVirt's libvirt,
// which has every form KubeVirt writes), the options or the
// layout, each with a *field.Error naming the field; nothing is dropped
// silently. It reports every such field, not only the first, as an
// *api.InvalidError (its Errors in the order of the areas; errors.As finds
// each *field.Error). TestCatalogueWithoutValidation (internal/pipeline)
// holds this table to what Convert refuses:
//
//	field                                            why it depends on the host
//	spec.livenessProbe, spec.readinessProbe          KubeVirt's virt-handler runs probes; a plain host has none
//	spec.resourceClaims                              dynamic resource allocation needs a cluster
//	spec.utilityVolumes                              utility volumes need a cluster
//	spec.domain.launchSecurity                       SEV-SNP, TDX and Secure Execution are not converted; AMD SEV
//	                                                 where Options.HostFacts lists no "sev" or Options.EFI names
//	                                                 no SEV build of OVMF
//	spec.domain.launchSecurity.sev.policy.encryptedState
//	                                                 SEV-ES where Options.HostFacts lists no "sev-es"
//	spec.domain.launchSecurity.sev.attestation       KubeVirt's virt-handler serves SEV attestation; a plain host has none
//	spec.domain.firmware.acpi                        the tables are files inside secret volumes, which no layout names
//	metadata.annotations[kubevirt.io/ignitiondata]   a file virt-launcher writes on its host and passes to QEMU
//	spec.accessCredentials[*].sshPublicKey.propagationMethod.qemuGuestAgent,
//	  spec.accessCredentials[*].userPassword.propagationMethod.qemuGuestAgent
//	                                                 KubeVirt's virt-handler talks to the guest agent
//	                                                 (noCloud and configDrive propagation are the launcher's
//	                                                 cloud-init volume's: the domain is the same)
//	spec.domain.devices.disks[*].changedBlockTracking
//	                                                 KubeVirt's backup machinery on the node
//	spec.domain.devices.interfaces[*].tag,           with a config drive: device metadata the host's
//	  spec.domain.devices.hostDevices[*].tag,        launcher does not write
//	  spec.domain.devices.gpus[*].tag
//	spec.domain.cpu.dedicatedCpuPlacement            Options.CPUSet has fewer host CPUs than the VMI pins
//	spec.domain.cpu.numa.guestMappingPassthrough     Options.HostFacts.NUMA gives no cells, or none for a pinned CPU,
//	                                                 or the memory is not whole hugepages, one or more per cell
//	                                                 (a realtime VMI too: KubeVirt requires the passthrough)
//	spec.domain.ioThreadsPolicy                      supplementalPool: Options.HostFacts lacks <driver><iothreads>
//	spec.domain.devices.disks[*].blockSize.custom.discardGranularity
//	                                                 Options.HostFacts lacks discard_granularity
//	spec.domain.devices.disks[*].blockSize.matchVolume
//	                                                 the volume's block size is the host's
//	spec.domain.devices.disks[*].lun                 the layout places the volume on a file, not a block device:
//	                                                 libvirt refuses device='lun' on a file (KubeVirt writes it)
//	spec.domain.devices.disks[*].shareable           not read-only, and the layout makes the volume a qcow2 image
//	                                                 (containerDisk and ephemeral overlays, empty disks): libvirt
//	                                                 refuses to share a writable one (KubeVirt writes it)
//	spec.domain.devices.panicDevices[*].model        pvpanic: Options.HostFacts lacks the pvpanic model
//	                                                 (libvirt 9.1 added it)
//	spec.domain.features.hyperv.tlbflush.direct,     Options.HostFacts lacks direct and extended TLB flush
//	  spec.domain.features.hyperv.tlbflush.extended
//	spec.domain.cpu.model                            Options.HostFacts: a named model QEMU does not offer, or
//	                                                 host-model or host-passthrough where it has none
//	spec.domain.cpu.features[*].name                 Options.HostFacts: required, and host-model disables it or
//	                                                 it is not among HostFacts.CPUFeatures
//	spec.domain.machine.type                         Options.HostFacts: a machine type QEMU does not offer
//	spec.domain.devices.tpm                          Options.HostFacts lacks a TPM emulator (swtpm)
//	spec.domain.devices.hostDevices[*],              Options.HostDevices: no entry for the device, or one of
//	  spec.domain.devices.gpus[*],                   the wrong kind, malformed, or a USB device (which
//	  spec.domain.devices.interfaces[*].sriov        libvirtxml writes in an order libvirt refuses)
//	spec.domain.devices.gpus[*].virtualGPUOptions.display.enabled
//	                                                 Options.HostDevices makes it a PCI GPU: libvirt 9.0 has no
//	                                                 display there; or a vGPU's, with autoattachGraphicsDevice
//	                                                 false: libvirt needs a graphics device for it (KubeVirt
//	                                                 writes it; its default display is left off then)
//	spec.domain.devices.clientPassthrough            the layout names no socket folder
//	spec.domain.devices.downwardMetrics              the layout names no socket for its channel
//	spec.domain.devices.filesystems[*].name          the layout names virtiofsd's socket or folder after it: not
//	                                                 a file name, or no volume's name
//	spec.domain.devices.filesystems[*].virtiofs      a filesystem without it gives the guest nothing (KubeVirt
//	                                                 ignores it)
//	spec.volumes[*].containerDisk,                   the host layout shares by virtiofs only claims (folders in
//	  spec.volumes[*].hostDisk,                      HostLayout.Claims) and config volumes (a folder of their
//	  spec.volumes[*].emptyDisk,                     files)
//	  spec.volumes[*].ephemeral,
//	  spec.volumes[*].cloudInitNoCloud,
//	  spec.volumes[*].cloudInitConfigDrive
//	spec.domain.devices.interfaces[*].passtBinding,  KubeVirt's pod network set-up, a cluster's binding plugins
//	  spec.domain.devices.interfaces[*].binding
//	spec.domain.devices.interfaces[*]                the layout's attachment is malformed, or passt where
//	                                                 Options.HostFacts lacks it
//	spec.domain.devices.interfaces[*].dhcpOptions    the host layout has no DHCP server
//	spec.networks[*].multus.networkName              HostLayout.Networks does not map it
//	spec.domain.firmware.bootloader.efi,             Options.EFI names no firmware; the layout no NVRAM file
//	  spec.domain.firmware.bootloader.efi.secureBoot
//	spec.domain.features.smm                         plain EFI without SMM where Options.EFI.CodeRequiresSMM
//	spec.domain.firmware.kernelBoot.container.kernelPath,
//	  spec.domain.firmware.kernelBoot.container.initrdPath
//	                                                 the layout gives no host path for the file
//	metadata.annotations[kubevirt.io/placePCIDevicesOnRootComplex]
//	                                                 more devices (host devices from Options among them) than
//	                                                 the root bus has slots
//	spec.volumes[*], spec.volumes[*].name,           the layout cannot place it: no one source, a name that is
//	  spec.volumes[*].memoryDump,                    no file name, no disk's source, an ephemeral volume
//	  spec.volumes[*].containerPath,                 without its claim, a source the layout does not place
//	  spec.volumes[*].ephemeral.persistentVolumeClaim.claimName,
//	  spec.volumes[*].sysprep, spec.volumes[*].downwardMetrics
//	spec.volumes[*].hostDisk.path,                   HostLayout.HostDiskAllow does not allow it; a block device
//	  spec.volumes[*].hostDisk.type                  cannot be created
//	spec.volumes[*].persistentVolumeClaim.claimName, HostLayout.Claims does not map the claim, or maps a disk's
//	  spec.volumes[*].dataVolume.name,               to a folder, or a filesystem's to a disk
//	  spec.volumes[*].ephemeral.persistentVolumeClaim.claimName
//
// api.Validate refuses these too, which KubeVirt's admission admits and
// libvirt or QEMU then refuses in the domain KubeVirt's converter writes
// (each in the invalid catalogue):
//
//	field                                            why
//	spec.domain.devices.disks[*].lun.bus             sata (where api.Default puts a LUN without a bus) or usb:
//	                                                 libvirt has LUNs on scsi and virtio only
//	spec.domain.devices.disks[*].cache               io native with writethrough or writeback: libvirt refuses
//	                                                 io='native' without cache none or directsync
//	spec.domain.firmware.kernelBoot.kernelArgs       without a kernelPath: QEMU refuses -append without -kernel
//	spec.domain.firmware.bootloader.bios.useSerial   with autoattachSerialConsole false: libvirt needs a serial
//	                                                 port for BIOS output
//	spec.domain.cpu.features[*].name                 a feature named twice: libvirt refuses it
//	spec.domain.devices.{disks,interfaces,inputs}[*].name, .watchdog.name, .sound.name
//	                                                 two devices of the same name: both would be ua-<name>, and
//	                                                 libvirt refuses an alias used twice
//
// # What Convert leaves out, and where its domain differs from KubeVirt's
//
// Two fields KubeVirt's converter ignores are ignored here too, so that
// the guest sees what KubeVirt's guest sees: spec.domain.features.apic.
// endOfInterrupt (a bare <apic/>; QEMU gives KVM guests paravirtual EOI
// by default) and the serial of a LUN or CD-ROM (KubeVirt gives serials to
// disks only).
//
// The domain differs from KubeVirt's, for the same guest, where KubeVirt's
// form fails libvirt's schema or define (each checked with
// virt-xml-validate and virsh define on libvirt 9.0):
//
//   - A CPU feature without a policy gets policy="require", in every CPU
//     mode (libvirt's default for a missing policy; its schema requires
//     the attribute in a domain's <cpu>).
//   - A <clock> without an offset gets offset="utc" (libvirt's default;
//     its schema requires the attribute, and an empty <clock/> fails it).
//   - A virtiofs filesystem gets accessmode="passthrough": KubeVirt writes
//     accessMode, which libvirt's schema refuses and its parser ignores, so
//     KubeVirt's guest gets the default, passthrough, the only mode
//     virtiofs has.
//   - A USB CD-ROM gets a qemu-xhci controller: KubeVirt turns USB on for
//     USB inputs and disks but not CD-ROMs, writes model none, and libvirt
//     refuses the domain at define ("USB is disabled for this domain, but
//     USB devices are present").
//   - A disk with io native and no cache gets cache="none". KubeVirt's
//     converter writes no cache, which libvirt refuses beside io='native'
//     at define; its virt-launcher then sets the cache of every disk that
//     has a host path and none set (SetDriverCacheMode): none where the
//     file system takes O_DIRECT, writethrough where not (and that one
//     libvirt refuses with io native too). Convert sets none only where
//     libvirt needs it, which is where virt-launcher sets none on a host
//     with direct I/O; the cache of the other disks is left to QEMU's
//     default, as KubeVirt's converter leaves it.
//   - Devices placed on the root complex skip the slots of devices with a
//     PCI address of their own (KubeVirt's placement gives a slot twice,
//     which libvirt refuses).
//
// A realtime VMI's domain has what KubeVirt's has (the PMU off, and
// <nosharepages/> with the hugepages of its NUMA cells) and, beside it,
// one <vcpusched> with SCHED_FIFO at priority 1 for each booted vCPU that
// spec.domain.cpu.realtime.mask names (every one without a mask): what
// KubeVirt's virt-handler gives those threads itself once QEMU runs,
// libvirt gives them when it starts the vCPUs, and nothing else here
// would (realtimePlan, realtime.go).
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
//     virtio model, the layout's paths...) are worked out once, when the
//     converter starts.
//   - The converter lives on Convert's stack: Convert calls the areas in
//     turn rather than through a table of functions.
//
// TestAllocsPerStage (internal/pipeline) pins the allocations and the
// bytes of a conversion of every sample VMI. BenchmarkOutputFloor measures
// the least any conversion into libvirtxml's types can cost: allocating,
// in one piece, the memory its domain reaches, and nothing else.
package convert
