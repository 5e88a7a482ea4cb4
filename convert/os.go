package convert

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// bootMenuTimeout is how long (ms) the boot menu of a VMI that starts
// paused waits, so that whoever unpauses it can reach the firmware menu.
const bootMenuTimeout = "10000"

// os writes <os>: the machine type, the SMBIOS tables of the <sysinfo> area,
// the firmware (BIOS or EFI, with secure boot), kernel boot and the boot
// menu of a VMI that starts paused. (ACPI tables from secret volumes,
// firmware.acpi, are refused with the fields no area honours: refuse.go.)
func (c *converter) os(d *libvirtxml.Domain) error {
	p := c.parts
	p.osType = libvirtxml.DomainOSType{Arch: "x86_64", Type: "hvm"}
	p.osSMBios = libvirtxml.DomainSMBios{Mode: "sysinfo"}
	o := &p.os
	o.Type = &p.osType
	o.SMBios = &p.osSMBios
	if m := c.spec.Domain.Machine; m != nil {
		if err := c.opts.HostFacts.checkMachine(m.Type); err != nil {
			return err
		}
		o.Type.Machine = m.Type
	}
	if c.vmi.ShouldStartPaused() {
		o.BootMenu = &libvirtxml.DomainBootMenu{Enable: "yes", Timeout: bootMenuTimeout}
	}
	if fw := c.spec.Domain.Firmware; fw != nil {
		// Each step fills its fields of o; the first refusal wins.
		for _, err := range []error{c.efi(fw, o), c.bios(fw, o), c.kernelBoot(fw, o)} {
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
// keys (api.Validate holds it to SMM being on). A persistent variable store
// needs nothing more here: the Layout's NVRAM path is where the store lives
// (KubeVirt keeps that folder on the VMI's backend storage; the host layout
// keeps it in the VMI's state folder). An AMD SEV guest boots the SEV
// build of OVMF (Options.EFI.SEVCode) with the plain variables template,
// as KubeVirt's (api.Validate holds it to secure boot being off).
func (c *converter) efi(fw *v1.Firmware, o *libvirtxml.DomainOS) error {
	if fw.Bootloader == nil || fw.Bootloader.EFI == nil {
		return nil
	}
	efi := fw.Bootloader.EFI
	secure := efi.SecureBoot == nil || *efi.SecureBoot
	code, vars := c.opts.EFI.Code, c.opts.EFI.Vars
	if ls := c.spec.Domain.LaunchSecurity; ls != nil && ls.SEV != nil {
		if code = c.opts.EFI.SEVCode; code == "" || vars == "" {
			return field.Forbidden(domainPath.Child("launchSecurity"), "no SEV firmware on this host (Options.EFI.SEVCode and Options.EFI.Vars are not both set)")
		}
	} else if secure {
		code, vars = c.opts.EFI.SecureBootCode, c.opts.EFI.SecureBootVars
		if code == "" || vars == "" {
			return field.Invalid(efiPath.Child("secureBoot"), true, "no secure-boot firmware on this host (Options.EFI.SecureBootCode and SecureBootVars are not both set); set secureBoot: false to boot plain EFI")
		}
	} else if code == "" || vars == "" {
		return field.Forbidden(efiPath, "no EFI firmware on this host (Options.EFI.Code and Options.EFI.Vars are not both set)")
	} else if err := c.checkSMMFirmware(); err != nil {
		return err
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
// command line (api.Validate holds kernel arguments to a kernel).
func (c *converter) kernelBoot(fw *v1.Firmware, o *libvirtxml.DomainOS) error {
	kb := fw.KernelBoot
	if kb == nil {
		return nil
	}
	if ct := kb.Container; ct != nil {
		if ct.KernelPath != "" {
			if c.paths.Kernel == "" {
				return field.Forbidden(kernelBootPath.Child("kernelPath"), "the layout gives no host path for the kernel")
			}
			o.Kernel = c.paths.Kernel
		}
		if ct.InitrdPath != "" {
			if c.paths.Initrd == "" {
				return field.Forbidden(kernelBootPath.Child("initrdPath"), "the layout gives no host path for the initrd")
			}
			o.Initrd = c.paths.Initrd
		}
	}
	o.Cmdline = kb.KernelArgs
	return nil
}
