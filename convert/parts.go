package convert

import "libvirt.org/go/libvirtxml"

// domainParts holds the parts of a domain that nearly every VMI has, and
// has at most one of: the Domain, its device list, and the structs the
// domain's pointers point to. Convert allocates them together, once, and
// each area takes its parts from here (d.CPU = &p.cpu) instead of
// allocating them one by one. Lists with a small bound on their length
// (controllers, SMBIOS entries) have their backing array here too.
//
// Parts that only some VMIs have (a clock, Hyper-V enlightenments, EFI, a
// TPM, hugepages...) are allocated by their area when it needs them, each
// area's in one piece; so are the device lists, as long as the VMI's
// (diskParts, interfaceParts). Every byte allocated brings the next
// garbage collection closer, and the collector's work dominates the cost
// of a conversion: a part that most VMIs leave empty does not belong
// here. (With the 8-byte header Go gives an object of this size, the
// struct fits Go's 4864-byte size class; see TestDomainPartsSize.)
//
// Every pointer of the domain points to a field of its own, so a caller
// may change any part of the returned domain without touching another.
type domainParts struct {
	domain  libvirtxml.Domain
	devices libvirtxml.DomainDeviceList

	// memory
	memory libvirtxml.DomainMemory

	// cpu
	vcpu     libvirtxml.DomainVCPU
	cpu      libvirtxml.DomainCPU
	topology libvirtxml.DomainCPUTopology

	// sysinfo: room for the entries KubeVirtOptions gives, and the VMI's
	// firmware uuid and serial
	sysInfo       [1]libvirtxml.DomainSysInfo
	smbios        libvirtxml.DomainSysInfoSMBIOS
	system        libvirtxml.DomainSysInfoSystem
	systemEntries [5]libvirtxml.DomainSysInfoEntry

	// os
	os       libvirtxml.DomainOS
	osType   libvirtxml.DomainOSType
	osSMBios libvirtxml.DomainSMBios

	// features, but for those only some VMIs have (featureParts,
	// hypervParts)
	features libvirtxml.DomainFeatureList
	acpi     libvirtxml.DomainFeature
	vmPort   libvirtxml.DomainFeatureState

	// controllers: usb, scsi, virtio-serial (and, for a few VMIs, a
	// pcie-root that takes a list of its own)
	controllers     [3]libvirtxml.DomainController
	controllerIndex [3]uint

	// graphics
	graphics     [1]libvirtxml.DomainGraphic
	vnc          libvirtxml.DomainGraphicVNC
	vncListeners [1]libvirtxml.DomainGraphicListener
	vncSocket    libvirtxml.DomainGraphicListenerSocket
	videos       [1]libvirtxml.DomainVideo

	// console
	serials  [1]libvirtxml.DomainSerial
	consoles [1]libvirtxml.DomainConsole
	console  consoleParts

	// channels: the guest agent's
	channels    [1]libvirtxml.DomainChannel
	agentSource libvirtxml.DomainChardevSource
	agentUNIX   libvirtxml.DomainChardevSourceUNIX
	agentTarget libvirtxml.DomainChannelTarget
	agentVirtIO libvirtxml.DomainChannelTargetVirtIO

	// balloon
	memBalloon      libvirtxml.DomainMemBalloon
	memBalloonStats libvirtxml.DomainMemBalloonStats

	// rng
	rngs       [1]libvirtxml.DomainRNG
	rngBackend libvirtxml.DomainRNGBackend
	rngRandom  libvirtxml.DomainRNGBackendRandom
}

// consoleParts are what the serial port and the console point to.
type consoleParts struct {
	serialPort, consolePort uint
	serialTarget            libvirtxml.DomainSerialTarget
	serialSource            libvirtxml.DomainChardevSource
	unix                    libvirtxml.DomainChardevSourceUNIX
	log                     libvirtxml.DomainChardevLog
	consoleSource           libvirtxml.DomainChardevSource
	pty                     libvirtxml.DomainChardevSourcePty
	consoleTarget           libvirtxml.DomainConsoleTarget
}
