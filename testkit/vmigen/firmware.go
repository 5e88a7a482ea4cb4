package vmigen

import (
	"fmt"
	"slices"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
)

// Kernel-boot images drawn: their reference and where the kernel and
// initrd are in them.
var kernelImages = []string{
	"quay.io/kubevirt/alpine-ext-kernel-boot-demo:v1.4.0",
	"localhost/vmi2libvirt/testguest:v1",
	"registry.example.com/kernels/fedora@sha256:" + "4f6b3c0b5a7e0c2d9b1e8f6a5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c",
}

// firmware draws the firmware uuid and serial, the bootloader (BIOS, with
// its output on the serial console at times, or EFI with or without
// secure boot and persistent variables) and kernel boot from a container
// image. Secure boot needs SMM: the features area turns it on.
func (g *gen) firmware() {
	fw := &v1.Firmware{}
	if g.p(0.2) {
		fw.UUID = types.UID(g.uuid())
	}
	if g.p(0.1) {
		fw.Serial = pick(g, "SN-0001", "VMIGEN.42", "serial of a VM")
	}
	switch pickW(g, weighted[string]{6, ""}, weighted[string]{2, "bios"}, weighted[string]{3, "efi"}) {
	case "bios":
		bios := &v1.BIOS{}
		if g.p(0.5) {
			bios.UseSerial = ptr(g.p(0.7))
		}
		fw.Bootloader = &v1.Bootloader{BIOS: bios}
	case "efi":
		efi := &v1.EFI{}
		switch pick(g, "unset", "on", "off") {
		case "on":
			efi.SecureBoot = ptr(true)
		case "off":
			efi.SecureBoot = ptr(false)
		}
		if g.p(0.2) {
			efi.Persistent = ptr(g.p(0.7))
		}
		fw.Bootloader = &v1.Bootloader{EFI: efi}
		g.efi = true
	}
	if g.p(0.15) {
		kb := &v1.KernelBoot{Container: &v1.KernelBootContainer{Image: pick(g, kernelImages...)}}
		c := kb.Container
		switch pickW(g, weighted[string]{5, "both"}, weighted[string]{2, "kernel"}, weighted[string]{1, "initrd"}) {
		case "both":
			c.KernelPath, c.InitrdPath = "/boot/vmlinuz", "/boot/initrd.img"
		case "kernel":
			c.KernelPath = "/boot/vmlinuz"
		case "initrd":
			c.InitrdPath = "/boot/initrd.img"
		}
		switch {
		case c.KernelPath != "" && g.p(0.6):
			kb.KernelArgs = pick(g, "console=ttyS0", "console=ttyS0 quiet", "root=/dev/vda ro")
		case c.KernelPath == "" && g.kv && g.p(0.5):
			// KubeVirt admits kernel arguments with only an initrd.
			kb.KernelArgs = "console=ttyS0"
			g.beyond(domainPath.Child("firmware", "kernelBoot", "kernelArgs"))
		}
		if g.p(0.3) {
			c.ImagePullPolicy = pick(g, k8sv1.PullAlways, k8sv1.PullIfNotPresent, k8sv1.PullNever)
		}
		fw.KernelBoot = kb
	}
	if fw.UUID != "" || fw.Serial != "" || fw.Bootloader != nil || fw.KernelBoot != nil {
		g.spec.Domain.Firmware = fw
	}
	if g.p(0.1) {
		g.spec.Domain.Chassis = &v1.Chassis{Manufacturer: "vmigen", Version: pick(g, "", "1.0"), Serial: pick(g, "", "CH-42"), Asset: pick(g, "", "asset 7"), Sku: pick(g, "", "SKU1")}
	}
	if g.p(0.2) {
		// QEMU 7.2's machine types, so that libvirt defines them.
		g.spec.Domain.Machine = &v1.Machine{Type: pick(g, "q35", "pc-q35-7.2", "pc-q35-6.2")}
	}
	if g.p(0.1) {
		g.spec.Architecture = "amd64"
	}
}

// secureBoot tells whether the VMI boots EFI with secure boot (on unless
// turned off), which needs SMM.
func (g *gen) secureBoot() bool {
	fw := g.spec.Domain.Firmware
	if fw == nil || fw.Bootloader == nil || fw.Bootloader.EFI == nil {
		return false
	}
	sb := fw.Bootloader.EFI.SecureBoot
	return sb == nil || *sb
}

// uuid draws a random version 4 UUID.
func (g *gen) uuid() string {
	var b [16]byte
	for i := range b {
		b[i] = byte(g.r.UintN(256))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// mac draws a locally administered unicast MAC address other than the one
// KubeVirt keeps for masquerade's in-pod bridge.
func (g *gen) mac() string {
	for {
		b := [6]byte{0x02}
		for i := 1; i < 6; i++ {
			b[i] = byte(g.r.UintN(256))
		}
		s := fmt.Sprintf("%02x:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4], b[5])
		if s != "02:00:00:00:00:00" && !slices.Contains(g.macs, s) {
			g.macs = append(g.macs, s)
			return s
		}
	}
}
