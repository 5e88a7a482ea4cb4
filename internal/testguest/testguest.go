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
// Build installs it into an image store as Ref, laid out as
// convert.HostLayout expects: <ImageFolder(Ref)>/boot/vmlinuz and
// /boot/initrd.img, for a VMI's spec.domain.firmware.kernelBoot.container.
package testguest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// Ref is the image reference the test guest is installed under.
const Ref = "localhost/vmi2libvirt/testguest:latest"

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
	DefaultImageStore = "/var/lib/vmi2libvirt/images"
)

// Options say where the pieces of the guest come from.
type Options struct {
	// KernelTree is the root a linux-image package was extracted to
	// (boot/vmlinuz-<version> and lib/modules/<version>/).
	KernelTree string
	// Busybox is a statically linked busybox binary.
	Busybox string
}

// Build builds the test guest from the default kernel tree and busybox and
// installs it into imageStore; it returns the image reference, Ref.
func Build(imageStore string) (ref string, err error) {
	return BuildWith(imageStore, Options{})
}

// BuildWith is Build with other sources. Files already installed with the
// same contents are left alone.
func BuildWith(imageStore string, opts Options) (string, error) {
	if opts.KernelTree == "" {
		opts.KernelTree = DefaultKernelTree
	}
	if opts.Busybox == "" {
		opts.Busybox = DefaultBusybox
	}
	version, err := kernelVersion(opts.KernelTree)
	if err != nil {
		return "", err
	}
	kernel, err := os.ReadFile(filepath.Join(opts.KernelTree, "boot", "vmlinuz-"+version))
	if err != nil {
		return "", fmt.Errorf("test guest kernel: %w", err)
	}
	initrd, err := Initramfs(opts.KernelTree, version, opts.Busybox)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(convert.HostLayout{ImageStore: imageStore}.ImageFolder(Ref), "boot")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for name, data := range map[string][]byte{"vmlinuz": kernel, "initrd.img": initrd} {
		if err := installFile(filepath.Join(dir, name), data); err != nil {
			return "", err
		}
	}
	return Ref, nil
}

// installFile writes data to path through a temporary file and a rename,
// unless path already holds data. Mode 0644: QEMU reads kernel and initrd.
func installFile(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// Initramfs returns the guest's initramfs (an uncompressed newc cpio
// archive): busybox, /init, and the modules of kernel version under
// kernelTree/lib/modules with the order to load them in.
func Initramfs(kernelTree, version, busybox string) ([]byte, error) {
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return nil, fmt.Errorf("test guest busybox: %w", err)
	}
	modDir := filepath.Join(kernelTree, "lib", "modules", version)
	mods, err := loadOrder(modDir, Modules)
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
