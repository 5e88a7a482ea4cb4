// Package testguest builds a tiny Linux guest for end-to-end tests, and
// parses what it prints.
//
// The guest is Debian's cloud kernel (extracted by .ci/prepare-host.sh from
// linux-image-cloud-amd64) with a busybox-static initramfs that loads the
// virtio, SCSI, ISO9660 and ACPI button modules, prints a report of what it
// sees on its serial console (CPU count, memory, disks with serials and
// sizes, NIC MACs, the files of every ISO9660 disk such as the cloud-init
// "cidata" one), then acts on the kernel argument testguest.action
// (poweroff, acpi or ignore); while it waits, a shell runs on its serial
// console. It boots in seconds under emulation.
//
// Install imports it, as an OCI image holding /boot/vmlinuz and
// /boot/initrd.img, into an image store under Ref, for a VMI's
// spec.domain.firmware.kernelBoot.container.
//
// The same guest also boots from firmware: BootImages builds, with
// Debian's generic kernel (it has the AHCI, e1000e and USB storage drivers
// the cloud kernel lacks) and BootModules, a hybrid ISO that GRUB boots
// under BIOS and EFI as a disk or a CD-ROM (HybridRef), and a disk whose
// EFI system partition holds Debian's signed shim, GRUB and kernel, for
// secure boot (SecureBootRef). InstallBootImages imports them as
// containerDisk images. Their guests also report each disk's bus, each
// NIC's driver, the firmware, secure boot and the other devices they see.
package testguest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/imagestore"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
)

// Ref is the reference the test guest's image is imported under. Its tag
// is not "latest": a VMI's image whose tag is latest defaults to pull
// policy Always, which asks a registry that an imported image never came
// from.
const Ref = "localhost/vmi2libvirt/testguest:v1"

// Paths of the kernel and initrd inside the image, for
// kernelBoot.container.kernelPath and initrdPath.
const (
	KernelPath = "/boot/vmlinuz"
	InitrdPath = "/boot/initrd.img"
)

// Defaults of Options.
const (
	DefaultKernelTree = "/var/cache/vmi2libvirt/kernel"
	DefaultBusybox    = "/bin/busybox"
	DefaultImageStore = convert.DefaultImageStore
)

// Options say where the pieces of the guest come from.
type Options struct {
	// KernelTree is the root a linux-image package was extracted to
	// (boot/vmlinuz-<version> and lib/modules/<version>/).
	KernelTree string
	// Busybox is a statically linked busybox binary.
	Busybox string
}

// Install builds the test guest's image (Image) and imports it into the
// image store at storeRoot under Ref, as an air-gapped host imports an
// image: through an OCI layout and imagestore.Store.Import. An image of
// the same digest already there is left alone.
func Install(storeRoot string, opts Options) (*imagestore.Image, error) {
	img, err := Image(opts)
	if err != nil {
		return nil, err
	}
	return installImage(storeRoot, Ref, img)
}

// Require installs the test guest into the image store at storeRoot, as
// Install with default Options does, for a test that boots it; a guest
// that cannot be built skips the test, or fails it under CI
// (hosttest.Missing).
func Require(t testing.TB, storeRoot string) *imagestore.Image {
	t.Helper()
	img, err := Install(storeRoot, Options{})
	if err != nil {
		hosttest.Missing(t, "test guest cannot be built: %v", err)
	}
	return img
}

// Initramfs returns the guest's initramfs (an uncompressed newc cpio
// archive): busybox, /init, and the modules of kernel version under
// kernelTree/lib/modules with the order to load them in.
func Initramfs(kernelTree, version, busybox string) ([]byte, error) {
	return initramfs(kernelTree, version, busybox, Modules)
}

// kernelAndInitramfs reads the kernel of kernelTree and builds its
// initramfs (initramfs) loading modules.
func kernelAndInitramfs(kernelTree, busybox string, modules []string) (kernel, initrd []byte, err error) {
	version, err := kernelVersion(kernelTree)
	if err != nil {
		return nil, nil, err
	}
	kernel, err = os.ReadFile(filepath.Join(kernelTree, "boot", "vmlinuz-"+version))
	if err != nil {
		return nil, nil, fmt.Errorf("test guest kernel: %w", err)
	}
	initrd, err = initramfs(kernelTree, version, busybox, modules)
	if err != nil {
		return nil, nil, err
	}
	return kernel, initrd, nil
}

// initramfs is Initramfs loading modules (and what they depend on).
func initramfs(kernelTree, version, busybox string, modules []string) ([]byte, error) {
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return nil, fmt.Errorf("test guest busybox: %w", err)
	}
	modDir := filepath.Join(kernelTree, "lib", "modules", version)
	mods, err := loadOrder(modDir, modules)
	if err != nil {
		return nil, err
	}
	entries := []cpioEntry{
		{name: "bin", mode: modeDir | 0o755},
		{name: "bin/busybox", mode: modeFile | 0o755, data: bb},
		{name: "bin/sh", mode: modeSymlink | 0o777, data: []byte("busybox")},
		{name: "dev", mode: modeDir | 0o755},
		{name: "dev/console", mode: modeCharDev | 0o600, rdevMajor: 5, rdevMinor: 1},
		{name: "etc", mode: modeDir | 0o755},
		{name: "init", mode: modeFile | 0o755, data: []byte(initScript)},
		{name: "lib", mode: modeDir | 0o755},
		{name: "lib/modules", mode: modeDir | 0o755},
		{name: "mnt", mode: modeDir | 0o755},
		{name: "proc", mode: modeDir | 0o755},
		{name: "sys", mode: modeDir | 0o755},
		{name: "tmp", mode: modeDir | 0o1777},
	}
	var load strings.Builder
	for _, m := range mods {
		data, err := os.ReadFile(filepath.Join(modDir, m.rel))
		if err != nil {
			return nil, err
		}
		file := m.name + ".ko"
		entries = append(entries, cpioEntry{name: "lib/modules/" + file, mode: modeFile | 0o644, data: data})
		fmt.Fprintf(&load, "%s %s\n", file, moduleArgs[m.name])
	}
	entries = append(entries, cpioEntry{name: "etc/modules.load", mode: modeFile | 0o644, data: []byte(load.String())})
	var buf bytes.Buffer
	if err := writeCpio(&buf, entries); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
