package vmigen

// KnownBugs are the forms of a VMI that api.Validate accepts and
// convert.Convert converts today into a domain that libvirt 9.0 refuses
// (its schema, or virDomainDefineXML with the VALIDATE flag). The
// generator leaves them out unless Config.KnownBugs is set, so that the
// properties over its VMIs hold; each is a refusal (with the field's path)
// or a conversion missing in api or convert. Found by this package's
// properties; the minimal VMI of each is in its test.
var KnownBugs = []string{
	// clock: {timer: ...} without utc or timezone (or clock: {}) becomes
	// a <clock> without offset, which the schema requires (libvirt itself
	// reads it as utc).
	"clock without offset",
	// panicDevices[].model pvpanic: libvirt 9.0's schema has no pvpanic
	// panic model (libvirt 9.1 added it).
	"pvpanic panic device",
	// io: native with a cache other than none, or none set: libvirt
	// refuses io='native' without cache none or directsync (KubeVirt's
	// virt-launcher sets cache none on file systems with direct I/O).
	"io native without cache none",
	// shareable: true on a volume that is a qcow2 file (containerDisk and
	// ephemeral overlays, emptyDisk, a qcow2 claim): libvirt refuses
	// shared access to a qcow2 disk.
	"shareable qcow2 disk",
	// bootloader.bios.useSerial: true with autoattachSerialConsole: false:
	// libvirt needs a serial port for BIOS serial output.
	"BIOS serial output without a serial console",
	// a vGPU's display (on by default for the first mediated GPU) with
	// autoattachGraphicsDevice: false: libvirt needs a graphics device.
	"vGPU display without graphics",
	// a disk and a tablet (or a disk and an interface, a watchdog, a sound
	// device) of the same name: both get the alias ua-<name>, and libvirt
	// refuses an alias used twice.
	"device names shared across kinds",
	// cpu.features naming a feature twice: libvirt refuses it.
	"a CPU feature named twice",
	// a guest PCI address of its own beside the
	// kubevirt.io/placePCIDevicesOnRootComplex annotation: the placement
	// gives another device the same slot (as KubeVirt's does).
	"a PCI address with placePCIDevicesOnRootComplex",
}
