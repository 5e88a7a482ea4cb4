package convert

import (
	"testing"

	v1 "kubevirt.io/api/core/v1"
)

func efiVMI(secure *bool, smm bool) *v1.VirtualMachineInstance {
	vmi := computeVMI(nil)
	vmi.Spec.Domain.Firmware = &v1.Firmware{Bootloader: &v1.Bootloader{EFI: &v1.EFI{SecureBoot: secure}}}
	if smm {
		vmi.Spec.Domain.Features = &v1.Features{SMM: &v1.FeatureState{}}
	}
	return vmi
}

// EFI as in the reference vmi-secureboot and vmi-alpine-efi: secure boot is
// on unless secureBoot is false; the loader is read-only pflash; the NVRAM
// path is the layout's.
func TestOSEFI(t *testing.T) {
	d, _, err := runArea(t, efiVMI(nil, true), nil, (*converter).os)
	if err != nil {
		t.Fatal(err)
	}
	l, n := d.OS.Loader, d.OS.NVRam
	if l.Path != "/usr/share/edk2/ovmf/OVMF_CODE.secboot.fd" || l.Secure != "yes" || l.Readonly != "yes" || l.Type != "pflash" ||
		n.Template != "/usr/share/edk2/ovmf/OVMF_VARS.secboot.fd" || n.NVRam != "/var/lib/libvirt/qemu/nvram/t_VARS.fd" {
		t.Errorf("loader %+v nvram %+v", l, n)
	}
	off := false
	d, _, err = runArea(t, efiVMI(&off, false), nil, (*converter).os)
	if err != nil || d.OS.Loader.Secure != "no" || d.OS.Loader.Path != "/usr/share/edk2/ovmf/OVMF_CODE.fd" {
		t.Errorf("plain EFI: %v, %+v", err, d.OS.Loader)
	}
}

func TestOSEFIRefusals(t *testing.T) {
	refusedByAPI(t, efiVMI(nil, false), "spec.domain.firmware.bootloader.efi.secureBoot", "secure boot needs SMM")

	_, _, err := runArea(t, efiVMI(nil, true), func(o *Options) { o.EFI.SecureBootVars = "" }, (*converter).os)
	fieldErr(t, err, "spec.domain.firmware.bootloader.efi.secureBoot", "no secure-boot firmware")

	off := false
	_, _, err = runArea(t, efiVMI(&off, false), func(o *Options) { o.EFI = EFIFirmware{} }, (*converter).os)
	fieldErr(t, err, "spec.domain.firmware.bootloader.efi", "no EFI firmware")
}

// Kernel boot takes the layout's host paths; api.Validate refuses arguments
// without a kernel (QEMU refuses -append without -kernel).
func TestOSKernelBoot(t *testing.T) {
	vmi := computeVMI(nil)
	vmi.Spec.Domain.Firmware = &v1.Firmware{KernelBoot: &v1.KernelBoot{
		KernelArgs: "console=ttyS0",
		Container:  &v1.KernelBootContainer{Image: "k", KernelPath: "/boot/vmlinuz", InitrdPath: "/boot/initrd"},
	}}
	d, _, err := runArea(t, vmi, nil, (*converter).os)
	if err != nil {
		t.Fatal(err)
	}
	if d.OS.Kernel != "/var/run/kubevirt/container-disks/kernel-boot/vmlinuz" || d.OS.Initrd != "/var/run/kubevirt/container-disks/kernel-boot/initrd" || d.OS.Cmdline != "console=ttyS0" {
		t.Errorf("os = %+v", d.OS)
	}
	vmi.Spec.Domain.Firmware.KernelBoot.Container = nil
	refusedByAPI(t, vmi, "spec.domain.firmware.kernelBoot.kernelArgs", "need a kernel")
	vmi.Spec.Domain.Firmware.KernelBoot.Container = &v1.KernelBootContainer{Image: "k", InitrdPath: "/boot/initrd"}
	refusedByAPI(t, vmi, "spec.domain.firmware.kernelBoot.kernelArgs", "need a kernel")
}
