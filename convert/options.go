package convert

import (
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Options are the host facts and embedder choices that shape a domain.
// The zero value is not useful on its own: set at least Layout. KubeVirtOptions
// returns what KubeVirt's virt-handler passes on an amd64 node.
type Options struct {
	// Layout says where the VMI's disks, sockets and logs live on the host and
	// how its interfaces attach. Required.
	Layout Layout

	// DomainType is the libvirt domain type: "kvm" (the default when empty)
	// or "qemu" for emulation.
	DomainType string

	// SMBIOS holds the strings written into the guest's SMBIOS system table.
	SMBIOS SMBIOS

	// EFI names the OVMF firmware files used when the VMI asks for EFI.
	EFI EFIFirmware

	// CPUSet lists the host CPUs the VMI's dedicated vCPUs are pinned to, in
	// order. Required when spec.domain.cpu.dedicatedCpuPlacement is true.
	CPUSet []uint

	// MemBalloonStatsPeriod is the balloon statistics period in seconds
	// (0 leaves statistics off).
	MemBalloonStatsPeriod uint

	// FreePageReporting turns on the balloon's free page reporting for VMIs
	// that are not high-performance (dedicated CPUs or hugepages).
	FreePageReporting bool

	// BochsForEFIGuests gives EFI guests a bochs video device instead of VGA.
	BochsForEFIGuests bool

	// SerialConsoleLog logs the serial console to a file named by the Layout,
	// unless the VMI turns it off.
	SerialConsoleLog bool

	// HostFacts are what the host's libvirt and QEMU can give a domain
	// (package hostcaps reads them). The zero value is KubeVirt's libvirt:
	// nothing is checked and KubeVirt's forms are written.
	HostFacts HostFacts

	// HugepageSize writes the page size of spec.domain.memory.hugepages
	// into <memoryBacking><hugepages>. KubeVirt leaves it out (its pod has
	// one hugetlbfs mount, of the size asked for, so libvirt finds it); on a
	// plain host, where several sizes may be mounted, set it.
	HugepageSize bool

	// HostDevices maps the name of each GPU, host device and SR-IOV
	// interface in the VMI to the host device that backs it. A VMI asking
	// for such a device without an entry here is refused.
	HostDevices map[string]HostDevice
}

// SMBIOS strings for the guest's system table (dmidecode -t system).
type SMBIOS struct {
	Manufacturer string
	Product      string
	Version      string
	SKU          string
	Family       string
}

// EFIFirmware names the OVMF code and variable-template files on the host,
// for plain and for secure boot.
type EFIFirmware struct {
	Code           string // e.g. /usr/share/OVMF/OVMF_CODE_4M.fd
	Vars           string // e.g. /usr/share/OVMF/OVMF_VARS_4M.fd
	SecureBootCode string // e.g. /usr/share/OVMF/OVMF_CODE_4M.secboot.fd
	SecureBootVars string // e.g. /usr/share/OVMF/OVMF_VARS_4M.ms.fd
	// SEVCode is the OVMF build an AMD SEV or SEV-ES guest boots, with
	// Vars (KubeVirt's OVMF_CODE.cc.fd); empty: SEV guests are refused.
	SEVCode string
	// CodeRequiresSMM: Code boots only with SMM on (its firmware
	// descriptor's requires-smm), so a plain EFI guest needs
	// spec.domain.features.smm (secure boot always does).
	CodeRequiresSMM bool
}

// HostDevice is a host device handed to the guest.
type HostDevice struct {
	// PCIAddress is the host PCI address, "0000:81:00.0". Set it for PCI
	// devices (GPUs, SR-IOV VFs, PCI host devices).
	PCIAddress string
	// MdevUUID is the uuid of a mediated device (vGPU); set it instead of
	// PCIAddress for those.
	MdevUUID string
	// USBVendor, USBProduct ("0x46f4", "0x0001") select a USB device.
	USBVendor, USBProduct string
}

// KubeVirtOptions returns the Options that KubeVirt's virt-handler passes on
// an amd64 node with KVM, with KubeVirt's pod paths as the layout: SMBIOS
// manufacturer and family "KubeVirt", product "None", OVMF under
// /usr/share/edk2/ovmf (its SEV build too), balloon statistics every 10 seconds, free page
// reporting, bochs video for EFI guests and a serial console log.
func KubeVirtOptions() Options {
	return Options{
		Layout:     KubeVirtLayout{},
		DomainType: "kvm",
		SMBIOS:     SMBIOS{Manufacturer: "KubeVirt", Product: "None", Family: "KubeVirt"},
		EFI: EFIFirmware{
			Code:           "/usr/share/edk2/ovmf/OVMF_CODE.fd",
			Vars:           "/usr/share/edk2/ovmf/OVMF_VARS.fd",
			SecureBootCode: "/usr/share/edk2/ovmf/OVMF_CODE.secboot.fd",
			SecureBootVars: "/usr/share/edk2/ovmf/OVMF_VARS.secboot.fd",
			SEVCode:        "/usr/share/edk2/ovmf/OVMF_CODE.cc.fd",
		},
		CPUSet:                []uint{2, 3, 4, 5},
		MemBalloonStatsPeriod: 10,
		FreePageReporting:     true,
		BochsForEFIGuests:     true,
		SerialConsoleLog:      true,
	}
}

// hostDevKind is the kind of host device an Options.HostDevices entry names.
type hostDevKind int

const (
	hostDevPCI hostDevKind = iota
	hostDevMdev
	hostDevUSB
)

// hostDevKindNames name the kinds in error messages.
var hostDevKindNames = map[hostDevKind]string{
	hostDevPCI:  "a PCI address",
	hostDevMdev: "a mediated device uuid",
	hostDevUSB:  "a USB vendor and product",
}

var (
	mdevUUIDPattern = regexp.MustCompile(`^[\da-fA-F]{8}-[\da-fA-F]{4}-[\da-fA-F]{4}-[\da-fA-F]{4}-[\da-fA-F]{12}$`)
	usbIDPattern    = regexp.MustCompile(`^0x[\da-fA-F]{4}$`)
)

// hostDevice finds the HostDevices entry of a named device of the VMI and
// tells which kind it is, or refuses the device: path names the VMI field,
// dra tells whether the VMI asks for the device through a resource claim,
// and allowed lists the kinds this device may be.
func (o *Options) hostDevice(path *field.Path, name string, dra bool, allowed ...hostDevKind) (HostDevice, hostDevKind, error) {
	hostDev, ok := o.HostDevices[name]
	if !ok {
		what := "a device plugin"
		if dra {
			what = "a resource claim (DRA)"
		}
		return HostDevice{}, 0, field.Invalid(path, name,
			fmt.Sprintf("host device allocated by %s is not available without a cluster; Options.HostDevices[%q] must give its host address", what, name))
	}
	var kinds []hostDevKind
	if hostDev.PCIAddress != "" {
		kinds = append(kinds, hostDevPCI)
	}
	if hostDev.MdevUUID != "" {
		kinds = append(kinds, hostDevMdev)
	}
	if hostDev.USBVendor != "" || hostDev.USBProduct != "" {
		kinds = append(kinds, hostDevUSB)
	}
	if len(kinds) != 1 {
		return HostDevice{}, 0, field.Invalid(path, name,
			fmt.Sprintf("Options.HostDevices[%q] must set exactly one of PCIAddress, MdevUUID or USBVendor and USBProduct", name))
	}
	kind := kinds[0]
	valid := false
	var want []string
	for _, k := range allowed {
		valid = valid || k == kind
		want = append(want, hostDevKindNames[k])
	}
	if !valid {
		return HostDevice{}, 0, field.Invalid(path, name,
			fmt.Sprintf("Options.HostDevices[%q] gives %s; this device needs %s", name, hostDevKindNames[kind], joinOr(want)))
	}
	var err error
	switch kind {
	case hostDevPCI:
		_, err = parsePCIAddress(hostDev.PCIAddress)
	case hostDevMdev:
		if !mdevUUIDPattern.MatchString(hostDev.MdevUUID) {
			err = fmt.Errorf("MdevUUID %q is not a uuid", hostDev.MdevUUID)
		}
	case hostDevUSB:
		if !usbIDPattern.MatchString(hostDev.USBVendor) || !usbIDPattern.MatchString(hostDev.USBProduct) {
			err = fmt.Errorf("USBVendor and USBProduct must both be 4-digit hex ids such as 0x46f4, got %q and %q", hostDev.USBVendor, hostDev.USBProduct)
		}
	}
	if err != nil {
		return HostDevice{}, 0, field.Invalid(path, name, fmt.Sprintf("Options.HostDevices[%q]: %v", name, err))
	}
	return hostDev, kind, nil
}
