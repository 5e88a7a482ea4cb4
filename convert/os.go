package convert

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

var firmwarePath = domainPath.Child("firmware")

// bootMenuTimeout is how long (ms) the boot menu of a VMI that starts
// paused waits, so that whoever unpauses it can reach the firmware menu.
const bootMenuTimeout = "10000"

// os writes <os>: the machine type, the SMBIOS tables of the <sysinfo> area,
// the firmware (BIOS or EFI, with secure boot), kernel boot and the boot
// menu of a VMI that starts paused.
func (c *converter) os(d *libvirtxml.Domain) error {
	p := c.parts
	p.osType = libvirtxml.DomainOSType{Arch: "x86_64", Type: "hvm"}
	p.osSMBios = libvirtxml.DomainSMBios{Mode: "sysinfo"}
	o := &p.os
	o.Type = &p.osType
	o.SMBios = &p.osSMBios
	if m := c.spec.Domain.Machine; m != nil {
		o.Type.Machine = m.Type
	}
	if c.vmi.ShouldStartPaused() {
		o.BootMenu = &libvirtxml.DomainBootMenu{Enable: "yes", Timeout: bootMenuTimeout}
	}
	if fw := c.spec.Domain.Firmware; fw != nil {
		// Each step fills its fields of o; the first refusal wins.
		for _, err := range []error{c.efi(fw, o), c.bios(fw, o), c.kernelBoot(fw, o), c.acpiTables(fw, o)} {
			if err != nil {
				return err
			}
		}
	}
	d.OS = o
	return nil
}

// efi writes the OVMF loader and the VMI's variable store for
// firmware.bootloader.efi. Secure boot (on unless secureBoot is false) takes
// the secure-boot build of OVMF and its variables template with enrolled
// keys. A persistent variable store needs nothing more here: the Layout's
// NVRAM path is where the store lives (KubeVirt keeps that folder on the
// VMI's backend storage; the host layout keeps it in the VMI's state folder).
func (c *converter) efi(fw *v1.Firmware, o *libvirtxml.DomainOS) error {
	if fw.Bootloader == nil || fw.Bootloader.EFI == nil {
		return nil
	}
	efi := fw.Bootloader.EFI
	secure := efi.SecureBoot == nil || *efi.SecureBoot
	code, vars := c.opts.EFI.Code, c.opts.EFI.Vars
	if secure {
		code, vars = c.opts.EFI.SecureBootCode, c.opts.EFI.SecureBootVars
		if code == "" || vars == "" {
			return field.Invalid(efiPath.Child("secureBoot"), true, "no secure-boot firmware on this host (Options.EFI.SecureBootCode and SecureBootVars are not both set); set secureBoot: false to boot plain EFI")
		}
		if !smmEnabled(c.spec.Domain.Features) {
			return field.Invalid(efiPath.Child("secureBoot"), true, "secure boot needs SMM: set spec.domain.features.smm")
		}
	} else if code == "" || vars == "" {
		return field.Forbidden(efiPath, "no EFI firmware on this host (Options.EFI.Code and Options.EFI.Vars are not both set)")
	}
	if c.paths.NVRAM == "" {
		return field.Forbidden(efiPath, "the layout names no NVRAM file for the EFI variables")
	}
	parts := new(efiParts)
	parts.loader = libvirtxml.DomainLoader{Path: code, Readonly: "yes", Secure: boolYesNo(secure), Type: "pflash"}
	parts.nvram = libvirtxml.DomainNVRam{NVRam: c.paths.NVRAM, Template: vars}
	o.Loader, o.NVRam = &parts.loader, &parts.nvram
	return nil
}

// efiParts are the firmware and variable store of an EFI guest,
// allocated together.
type efiParts struct {
	loader libvirtxml.DomainLoader
	nvram  libvirtxml.DomainNVRam
}

// bios writes the SeaBIOS options: useSerial sends its output to the serial
// console.
func (c *converter) bios(fw *v1.Firmware, o *libvirtxml.DomainOS) error {
	if fw.Bootloader == nil || fw.Bootloader.BIOS == nil {
		return nil
	}
	if us := fw.Bootloader.BIOS.UseSerial; us != nil && *us {
		o.BIOS = &libvirtxml.DomainBIOS{UseSerial: "yes"}
	}
	return nil
}

// kernelBoot boots the kernel and initrd of firmware.kernelBoot.container,
// from the host paths the Layout gives for them, with kernelArgs as the
// command line.
func (c *converter) kernelBoot(fw *v1.Firmware, o *libvirtxml.DomainOS) error {
	kb := fw.KernelBoot
	if kb == nil {
		return nil
	}
	kbPath := kernelBootPath
	if ct := kb.Container; ct != nil {
		ctPath := kernelBootContainerPath
		if ct.KernelPath != "" {
			if c.paths.Kernel == "" {
				return field.Forbidden(ctPath.Child("kernelPath"), "the layout gives no host path for the kernel")
			}
			o.Kernel = c.paths.Kernel
		}
		if ct.InitrdPath != "" {
			if c.paths.Initrd == "" {
				return field.Forbidden(ctPath.Child("initrdPath"), "the layout gives no host path for the initrd")
			}
			o.Initrd = c.paths.Initrd
		}
	}
	if kb.KernelArgs != "" && o.Kernel == "" {
		return field.Forbidden(kbPath.Child("kernelArgs"), "kernel arguments need a kernel: set kernelBoot.container.kernelPath")
	}
	o.Cmdline = kb.KernelArgs
	return nil
}

// acpiTables refuses firmware.acpi: the SLIC and MSDM tables live in secret
// volumes, and a Layout names no file inside a volume.
func (c *converter) acpiTables(fw *v1.Firmware, _ *libvirtxml.DomainOS) error {
	if fw.ACPI != nil {
		return field.Forbidden(firmwarePath.Child("acpi"), "ACPI SLIC/MSDM tables from secret volumes are not converted")
	}
	return nil
}

// boolYesNo spells a bool the way libvirt's yes/no attributes do.
func boolYesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// boolOnOff spells a bool the way libvirt's on/off attributes do.
func boolOnOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// optionalOn reads an optional switch of the API, which is on when left out.
func optionalOn(b *bool) bool {
	return b == nil || *b
}
