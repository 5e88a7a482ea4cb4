package hostcaps

import (
	"fmt"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// Probe is a throwaway domain that only a libvirt with a form of
// KubeVirt's domain defines: the launcher defines it (validating against
// libvirt's schema), undefines it, and lists the Lack of each probe that
// was refused in Documents.Refused. A libvirt's version says less than
// its answer: distributions backport.
type Probe struct {
	// Lack is what a refusal means the host lacks.
	Lack convert.Lack
	// Devices, Features and Top are the probe domain's <devices> content,
	// <features> content and elements beside them.
	Devices, Features, Top string
}

// Probes are the forms Facts learns of by a definition. Each probe is the
// smallest domain that has its form; without the form, each defines.
var Probes = []Probe{
	{Lack: convert.LackSlotlessMaxMemory, Top: `<maxMemory slots="0" unit="MiB">256</maxMemory>`},
	{Lack: convert.LackDiscardGranularity, Devices: `<disk type="file" device="disk"><driver name="qemu" type="raw"/><source file="/dev/null"/>` +
		`<target dev="vda" bus="virtio"/><blockio logical_block_size="512" physical_block_size="512" discard_granularity="4096"/></disk>`},
	{Lack: convert.LackTLBFlushDirectExtended, Features: `<hyperv mode="custom"><vpindex state="on"/>` +
		`<tlbflush state="on"><direct state="on"/><extended state="on"/></tlbflush></hyperv>`},
	{Lack: convert.LackDiskIOThreads, Top: `<iothreads>1</iothreads>`, Devices: `<disk type="file" device="disk">` +
		`<driver name="qemu" type="raw"><iothreads><iothread id="1"/></iothreads></driver><source file="/dev/null"/><target dev="vda" bus="virtio"/></disk>`},
	{Lack: convert.LackPvpanic, Devices: `<panic model="pvpanic"/>`},
	{Lack: convert.LackPasst, Devices: `<interface type="user"><backend type="passt"/><model type="virtio"/></interface>`},
}

// Domain is the probe's domain, called name, of domainType ("kvm" or
// "qemu") on a q35 machine.
func (p Probe) Domain(name, domainType string) string {
	return fmt.Sprintf(`<domain type=%q><name>%s</name>%s<memory unit="MiB">64</memory>`+
		`<os><type arch="x86_64" machine="q35">hvm</type></os><features>%s</features><devices>%s</devices></domain>`,
		domainType, name, p.Top, p.Features, p.Devices)
}
