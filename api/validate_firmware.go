package api

import (
	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
)

// validateFirmware applies KubeVirt's firmware rules — EFI and BIOS are
// exclusive, secure boot needs SMM (except under TDX), kernel boot needs a
// container image with a kernel or initrd at absolute clean paths and
// kernel arguments need a kernel (a kernelPath too, this library's own:
// KubeVirt passes them on and QEMU refuses -append without -kernel), ACPI
// tables come from Secret volumes, and
// launch security (SEV, SNP, TDX) is one kind, with EFI, without secure boot
// for SEV/SNP, without persistent EFI variables for SNP/TDX, without SMM
// for TDX, SEV attestation only when starting paused and no bootable NIC —
// and this library's own: firmware.uuid must be a UUID, EFI needs ACPI
// (libvirt refuses UEFI without it on x86), and BIOS output on the serial
// port needs the serial console (libvirt refuses it without a serial
// port; KubeVirt's converter writes it).
func validateFirmware(vmi *v1.VirtualMachineInstance) field.ErrorList {
	var errs field.ErrorList
	d := &vmi.Spec.Domain
	fw := d.Firmware
	tdx := d.LaunchSecurity != nil && d.LaunchSecurity.TDX != nil
	if fw != nil {
		if fw.UUID != "" {
			if _, err := uuid.Parse(string(fw.UUID)); err != nil {
				errs = append(errs, field.Invalid(firmwarePath.Child("uuid"), string(fw.UUID), "not a UUID such as 5f6e8a3c-1d2b-4c5d-9e8f-0a1b2c3d4e5f"))
			}
		}
		if bl := fw.Bootloader; bl != nil {
			if bl.EFI != nil && bl.BIOS != nil {
				errs = append(errs, field.Invalid(firmwarePath.Child("bootloader"), "efi and bios", "EFI and BIOS are mutually exclusive"))
			}
			if bl.BIOS != nil && isTrue(bl.BIOS.UseSerial) && isFalse(d.Devices.AutoattachSerialConsole) {
				errs = append(errs, field.Invalid(firmwarePath.Child("bootloader", "bios", "useSerial"), true,
					"BIOS output on the serial port needs one, which "+devicesPath.Child("autoattachSerialConsole").String()+": false leaves out (libvirt refuses it)"))
			}
			if bl.EFI != nil && (bl.EFI.SecureBoot == nil || *bl.EFI.SecureBoot) && !enabled(featuresSMM(d)) && !tdx {
				why := "secure boot needs SMM, which " + featuresPath.Child("smm").String() + " disables"
				if featuresSMM(d) == nil {
					why = "secure boot needs SMM: set " + featuresPath.Child("smm").String() + ": {} (or secureBoot: false)"
				}
				errs = append(errs, field.Invalid(firmwarePath.Child("bootloader", "efi", "secureBoot"), true, why))
			}
			if f := d.Features; bl.EFI != nil && f != nil && f.ACPI.Enabled != nil && !*f.ACPI.Enabled {
				errs = append(errs, field.Invalid(featuresPath.Child("acpi", "enabled"), false,
					"UEFI ("+firmwarePath.Child("bootloader", "efi").String()+") needs ACPI: libvirt refuses the domain without it"))
			}
		}
		if kb := fw.KernelBoot; kb != nil {
			errs = append(errs, validateKernelBoot(kb, firmwarePath.Child("kernelBoot"))...)
		}
		if acpi := fw.ACPI; acpi != nil {
			errs = append(errs, validateACPI(vmi, acpi)...)
		}
	}
	if d.LaunchSecurity != nil {
		errs = append(errs, validateLaunchSecurity(vmi)...)
	}
	return errs
}

func featuresSMM(d *v1.DomainSpec) *v1.FeatureState {
	if d.Features == nil {
		return nil
	}
	return d.Features.SMM
}

// validateKernelBoot checks kernel boot from a container image.
func validateKernelBoot(kb *v1.KernelBoot, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if kb.Container == nil {
		if kb.KernelArgs != "" {
			errs = append(errs, field.Invalid(p.Child("kernelArgs"), kb.KernelArgs, "kernel arguments need a kernel: set "+p.Child("container").String()))
		}
		return errs
	}
	c := kb.Container
	cp := p.Child("container")
	if c.Image == "" {
		errs = append(errs, field.Required(cp.Child("image"), "the container image that holds the kernel"))
	}
	if c.KernelPath == "" && c.InitrdPath == "" {
		errs = append(errs, field.Required(cp, "at least one of kernelPath and initrdPath"))
	}
	if c.KernelPath != "" {
		errs = append(errs, validateAbsPath(cp.Child("kernelPath"), c.KernelPath)...)
	} else if kb.KernelArgs != "" {
		errs = append(errs, field.Forbidden(p.Child("kernelArgs"), "kernel arguments need a kernel: set kernelBoot.container.kernelPath"))
	}
	if c.InitrdPath != "" {
		errs = append(errs, validateAbsPath(cp.Child("initrdPath"), c.InitrdPath)...)
	}
	return errs
}

// validateACPI checks that the ACPI tables come from Secret volumes.
func validateACPI(vmi *v1.VirtualMachineInstance, acpi *v1.ACPI) field.ErrorList {
	p := firmwarePath.Child("acpi")
	if acpi.SlicNameRef == "" && acpi.MsdmNameRef == "" {
		return field.ErrorList{field.Required(p, "slicNameRef or msdmNameRef: the Secret volume holding the ACPI table")}
	}
	var errs field.ErrorList
	volumes := volumesByName(vmi)
	for _, ref := range []struct{ name, value string }{{"slicNameRef", acpi.SlicNameRef}, {"msdmNameRef", acpi.MsdmNameRef}} {
		if ref.value == "" {
			continue
		}
		v, ok := volumes[ref.value]
		switch {
		case !ok:
			errs = append(errs, field.Invalid(p.Child(ref.name), ref.value, "no volume of this name"))
		case v.Secret == nil:
			errs = append(errs, field.Invalid(p.Child(ref.name), ref.value, "must name a secret volume"))
		}
	}
	return errs
}

// validateLaunchSecurity checks SEV, SNP and TDX as KubeVirt does on amd64.
func validateLaunchSecurity(vmi *v1.VirtualMachineInstance) field.ErrorList {
	d := &vmi.Spec.Domain
	ls := d.LaunchSecurity
	p := domainPath.Child("launchSecurity")
	var kinds []string
	if ls.SEV != nil {
		kinds = append(kinds, "SEV")
	}
	if ls.SNP != nil {
		kinds = append(kinds, "SNP")
	}
	if ls.TDX != nil {
		kinds = append(kinds, "TDX")
	}
	if len(kinds) != 1 {
		return field.ErrorList{field.Invalid(p, kinds, "exactly one of sev, snp and tdx must be set")}
	}
	kind := kinds[0]
	var errs field.ErrorList
	if ls.TDX != nil && enabled(featuresSMM(d)) {
		errs = append(errs, field.Invalid(p.Child("tdx"), kind, "TDX does not work with SMM ("+featuresPath.Child("smm").String()+")"))
	}
	fw := d.Firmware
	if fw == nil || fw.Bootloader == nil || fw.Bootloader.EFI == nil {
		errs = append(errs, field.Invalid(p, kind, kind+" needs EFI firmware ("+firmwarePath.Child("bootloader", "efi").String()+")"))
	} else {
		efi := fw.Bootloader.EFI
		if (ls.SEV != nil || ls.SNP != nil) && (efi.SecureBoot == nil || *efi.SecureBoot) {
			errs = append(errs, field.Invalid(firmwarePath.Child("bootloader", "efi", "secureBoot"), true, kind+" does not work with secure boot"))
		}
		if (ls.SNP != nil || ls.TDX != nil) && isTrue(efi.Persistent) {
			errs = append(errs, field.Invalid(firmwarePath.Child("bootloader", "efi", "persistent"), true, kind+" does not work with persistent EFI variables"))
		}
	}
	if ls.SEV != nil && ls.SEV.Attestation != nil && (vmi.Spec.StartStrategy == nil || *vmi.Spec.StartStrategy != v1.StartStrategyPaused) {
		errs = append(errs, field.Invalid(p.Child("sev", "attestation"), "{}", "SEV attestation needs "+specPath.Child("startStrategy").String()+": Paused"))
	}
	for i, iface := range d.Devices.Interfaces {
		if iface.BootOrder != nil {
			errs = append(errs, field.Invalid(ifacesPath.Index(i).Child("bootOrder"), *iface.BootOrder, kind+" does not work with bootable NICs"))
		}
	}
	return errs
}
