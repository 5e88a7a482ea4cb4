package testguest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/vmi2libvirt/vmi2libvirt/imagestore"
)

// References of the bootable images, containerDisk images holding one raw
// disk file, /disk/DiskFile. Both boot the test guest, with the generic
// kernel and BootModules, from firmware: the kernel command line says
// which image booted (ImageArg) and through which GRUB (LoaderArg), and
// the action is always poweroff.
const (
	// HybridRef is an ISO9660 image, hybrid as grub-mkrescue makes them:
	// GRUB for BIOS (El Torito and an MBR that boots it as a disk) and for
	// EFI (an EFI system partition appended to the ISO, also its El Torito
	// EFI image). It boots as a disk or as a CD-ROM, under SeaBIOS or
	// OVMF. Its GRUB is not signed: secure boot refuses it.
	HybridRef = "localhost/vmi2libvirt/testguest-hybrid:v1"
	// SecureBootRef is a disk with one EFI system partition holding
	// Debian's signed shim as the removable-media loader, Debian's signed
	// GRUB beside it, and Debian's signed generic kernel with its signed
	// modules: it boots under OVMF with secure boot (Microsoft's keys
	// enrolled, as OVMF_VARS_4M.ms.fd has them) and without.
	SecureBootRef = "localhost/vmi2libvirt/testguest-secureboot:v1"
	// DiskFile is the name of the disk file in the images.
	DiskFile = "disk.img"
)

// Kernel arguments the bootable images' GRUB passes.
const (
	// ImageArg names the image that booted: hybrid or secureboot.
	ImageArg = "testguest.image"
	// LoaderArg is "grub-" and GRUB's platform: grub-pc (BIOS) or
	// grub-efi.
	LoaderArg = "testguest.loader"
)

// Defaults of BootOptions: where .ci/prepare-host.sh extracts Debian's
// generic kernel and the signed boot loaders, and where Debian's GRUB
// packages install their images and modules.
const (
	DefaultGenericKernelTree = "/var/cache/vmi2libvirt/kernel-generic"
	DefaultSignedBootTree    = "/var/cache/vmi2libvirt/signed-boot"
	DefaultGrubLib           = "/usr/lib/grub"
)

// Paths of the signed boot loaders under BootOptions.SignedBootTree, as
// packages shim-signed and grub-efi-amd64-signed ship them.
const (
	signedShim = "usr/lib/shim/shimx64.efi.signed"
	signedGrub = "usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed"
)

// BootOptions say where the pieces of the bootable images come from.
type BootOptions struct {
	// KernelTree is the root Debian's generic kernel package
	// (linux-image-amd64's) was extracted to; its kernel is signed.
	KernelTree string
	// SignedBootTree is the root shim-signed and grub-efi-amd64-signed
	// were extracted to.
	SignedBootTree string
	// GrubLib holds GRUB's i386-pc and x86_64-efi folders (packages
	// grub-pc-bin and grub-efi-amd64-bin).
	GrubLib string
	// Busybox is a statically linked busybox binary.
	Busybox string
}

func (o BootOptions) withDefaults() BootOptions {
	if o.KernelTree == "" {
		o.KernelTree = DefaultGenericKernelTree
	}
	if o.SignedBootTree == "" {
		o.SignedBootTree = DefaultSignedBootTree
	}
	if o.GrubLib == "" {
		o.GrubLib = DefaultGrubLib
	}
	if o.Busybox == "" {
		o.Busybox = DefaultBusybox
	}
	return o
}

// BootImage is one bootable image of the test guest.
type BootImage struct {
	// Name is the image's ImageArg value: hybrid or secureboot.
	Name string
	// Ref is the reference it is imported under.
	Ref string
	// Disk is the raw disk image.
	Disk []byte
}

// BootTools are the programs BootImages runs (packages grub-common,
// xorriso and mtools).
var BootTools = []string{"grub-mkimage", "xorriso", "mformat", "mmd", "mcopy"}

// sourceDateEpoch is the time of every file in the images (2024-01-01),
// so that the same inputs give the same bytes: mtools and xorriso take it
// from SOURCE_DATE_EPOCH.
const sourceDateEpoch = 1704067200

// BootImages builds the bootable images, HybridRef's and SecureBootRef's,
// with Debian's tools (grub-mkimage, xorriso, mtools), no loop device and
// no root: the same inputs give the same bytes.
func BootImages(opts BootOptions) ([]BootImage, error) {
	opts = opts.withDefaults()
	kernel, initrd, err := kernelAndInitramfs(opts.KernelTree, opts.Busybox, append(append([]string(nil), Modules...), BootModules...))
	if err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp("", "testguest-boot-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)
	b := &bootBuilder{opts: opts, work: work, kernel: kernel, initrd: initrd}
	hybrid, err := b.hybrid()
	if err != nil {
		return nil, fmt.Errorf("test guest hybrid image: %w", err)
	}
	sb, err := b.secureBoot()
	if err != nil {
		return nil, fmt.Errorf("test guest secure-boot image: %w", err)
	}
	return []BootImage{
		{Name: "hybrid", Ref: HybridRef, Disk: hybrid},
		{Name: "secureboot", Ref: SecureBootRef, Disk: sb},
	}, nil
}

// InstallBootImages builds the bootable images and imports each into the
// image store at storeRoot as a containerDisk image (DiskImage) under its
// Ref; an image of the same digest already there is left alone.
func InstallBootImages(storeRoot string, opts BootOptions) ([]*imagestore.Image, error) {
	images, err := BootImages(opts)
	if err != nil {
		return nil, err
	}
	var out []*imagestore.Image
	for _, bi := range images {
		img, err := DiskImage(DiskFile, bi.Disk)
		if err != nil {
			return nil, err
		}
		got, err := installImage(storeRoot, bi.Ref, img)
		if err != nil {
			return nil, err
		}
		out = append(out, got)
	}
	return out, nil
}

// bootBuilder builds the images in a work folder.
type bootBuilder struct {
	opts           BootOptions
	work           string
	kernel, initrd []byte
}

// grubModules are built into the GRUB images made here (with what they
// depend on): enough to find the image's files, read its config and boot
// Linux.
var grubModules = []string{"iso9660", "fat", "part_msdos", "part_gpt", "normal", "configfile", "linux", "search", "search_fs_file", "echo", "test"}

// grubConfig is the menu of an image: one entry, no wait.
func grubConfig(name, kernel, initrd string) string {
	return fmt.Sprintf(`set timeout=0
menuentry "testguest %s" {
	linux %s %s %s %s=%s %s=grub-${grub_platform}
	initrd %s
}
`, name, kernel, KernelArgs, ActionPowerOff, ImageArg, name, LoaderArg, initrd)
}

// hybrid builds HybridRef's disk: an ISO9660 file system holding the
// kernel, the initrd and GRUB's config, GRUB's BIOS El Torito image, an
// MBR that starts it from a disk (GRUB's boot_hybrid.img, patched by
// xorriso), and an EFI system partition appended to the ISO whose
// removable-media loader is GRUB for EFI. Both GRUBs find the ISO by a
// marker file.
func (b *bootBuilder) hybrid() ([]byte, error) {
	dir := filepath.Join(b.work, "hybrid")
	iso := filepath.Join(dir, "iso")
	marker := "/boot/testguest-hybrid"
	files := map[string][]byte{
		"boot/vmlinuz":       b.kernel,
		"boot/initrd.img":    b.initrd,
		"boot/grub/grub.cfg": []byte(grubConfig("hybrid", "/boot/vmlinuz", "/boot/initrd.img")),
		marker[1:]:           []byte("hybrid\n"),
	}
	if err := writeTree(iso, files); err != nil {
		return nil, err
	}
	early := filepath.Join(dir, "early.cfg")
	if err := os.WriteFile(early, []byte("search --no-floppy --file --set=root "+marker+"\nset prefix=($root)/boot/grub\n"), 0o644); err != nil {
		return nil, err
	}
	bios := filepath.Join(iso, "boot", "grub", "bios.img")
	if err := b.run("grub-mkimage", append([]string{"-O", "i386-pc-eltorito", "-d", filepath.Join(b.opts.GrubLib, "i386-pc"),
		"-p", "/boot/grub", "-c", early, "-o", bios, "biosdisk"}, grubModules...)...); err != nil {
		return nil, err
	}
	efi := filepath.Join(dir, "bootx64.efi")
	if err := b.run("grub-mkimage", append([]string{"-O", "x86_64-efi", "-d", filepath.Join(b.opts.GrubLib, "x86_64-efi"),
		"-p", "/boot/grub", "-c", early, "-o", efi}, grubModules...)...); err != nil {
		return nil, err
	}
	grubEFI, err := os.ReadFile(efi)
	if err != nil {
		return nil, err
	}
	esp := filepath.Join(dir, "esp.img")
	if err := b.fat(esp, "ESP", map[string][]byte{"EFI/BOOT/BOOTX64.EFI": grubEFI}); err != nil {
		return nil, err
	}
	if err := fixTimes(iso); err != nil {
		return nil, err
	}
	out := filepath.Join(dir, "hybrid.img")
	if err := b.run("xorriso", "-as", "mkisofs", "-quiet", "-o", out, "-R", "-V", "TESTGUEST",
		"-b", "boot/grub/bios.img", "-no-emul-boot", "-boot-load-size", "4", "-boot-info-table",
		"--grub2-boot-info", "--grub2-mbr", filepath.Join(b.opts.GrubLib, "i386-pc", "boot_hybrid.img"),
		"-eltorito-alt-boot", "-e", "--interval:appended_partition_2:all::", "-no-emul-boot",
		"-append_partition", "2", "0xef", esp, iso); err != nil {
		return nil, err
	}
	return os.ReadFile(out)
}

// secureBoot builds SecureBootRef's disk: an MBR with one partition of
// type EFI system, a FAT file system with shim as \EFI\BOOT\BOOTX64.EFI,
// the signed GRUB beside it (shim starts grubx64.efi from its own folder),
// GRUB's config where Debian's signed GRUB reads it (\EFI\debian, its
// prefix), the kernel and the initrd.
func (b *bootBuilder) secureBoot() ([]byte, error) {
	shim, err := os.ReadFile(filepath.Join(b.opts.SignedBootTree, signedShim))
	if err != nil {
		return nil, fmt.Errorf("signed shim (run .ci/prepare-host.sh): %w", err)
	}
	grub, err := os.ReadFile(filepath.Join(b.opts.SignedBootTree, signedGrub))
	if err != nil {
		return nil, fmt.Errorf("signed GRUB (run .ci/prepare-host.sh): %w", err)
	}
	esp := filepath.Join(b.work, "secureboot-esp.img")
	if err := b.fat(esp, "TESTGUEST", map[string][]byte{
		"EFI/BOOT/BOOTX64.EFI": shim,
		"EFI/BOOT/grubx64.efi": grub,
		"EFI/debian/grub.cfg":  []byte(grubConfig("secureboot", "/vmlinuz", "/initrd.img")),
		"vmlinuz":              b.kernel,
		"initrd.img":           b.initrd,
		"testguest-secureboot": []byte("secureboot\n"),
	}); err != nil {
		return nil, err
	}
	fs, err := os.ReadFile(esp)
	if err != nil {
		return nil, err
	}
	return mbrDisk(fs), nil
}

// partitionStart is where the one partition of mbrDisk starts, in
// 512-byte sectors (1 MiB, as partitioning tools align it).
const partitionStart = 2048

// mbrDisk returns a disk whose MBR has one partition of type 0xEF (EFI
// system) holding fs, from partitionStart; fs is padded to whole sectors.
func mbrDisk(fs []byte) []byte {
	sectors := (len(fs) + 511) / 512
	disk := make([]byte, (partitionStart+sectors)*512)
	copy(disk[partitionStart*512:], fs)
	binary.LittleEndian.PutUint32(disk[0x1b8:], 0x74657374) // disk signature "test"
	entry := disk[0x1be : 0x1be+16]
	// CHS fields at their maximum: firmware reads the LBA fields.
	copy(entry[1:4], []byte{0xfe, 0xff, 0xff})
	entry[4] = 0xef
	copy(entry[5:8], []byte{0xfe, 0xff, 0xff})
	binary.LittleEndian.PutUint32(entry[8:], partitionStart)
	binary.LittleEndian.PutUint32(entry[12:], uint32(sectors))
	disk[510], disk[511] = 0x55, 0xaa
	return disk
}

// fat writes a FAT file system holding files (slash-separated paths) to
// path with mtools: sized to fit them with 1 MiB to spare, a fixed serial
// number, every time sourceDateEpoch.
func (b *bootBuilder) fat(path, label string, files map[string][]byte) error {
	src := path + ".d"
	if err := writeTree(src, files); err != nil {
		return err
	}
	if err := fixTimes(src); err != nil {
		return err
	}
	total := 0
	for _, data := range files {
		total += len(data)
	}
	const mib = 1 << 20
	size := (total/mib + 2) * mib
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		return err
	}
	if err := b.run("mformat", "-i", path, "-T", fmt.Sprint(size/512), "-h", "64", "-s", "32", "-N", "74657374", "-v", label, "::"); err != nil {
		return err
	}
	// mcopy -s copies the folders as they are; -m keeps their times.
	entries, err := os.ReadDir(src)
	if err != nil {
		return err
	}
	args := []string{"-i", path, "-s", "-m", "-Q"}
	for _, e := range entries {
		args = append(args, filepath.Join(src, e.Name()))
	}
	return b.run("mcopy", append(args, "::/")...)
}

// run runs a tool with SOURCE_DATE_EPOCH set, returning its output in the
// error when it fails.
func (b *bootBuilder) run(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("SOURCE_DATE_EPOCH=%d", sourceDateEpoch), "MTOOLS_SKIP_CHECK=1")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// writeTree writes files (slash-separated paths relative to root).
func writeTree(root string, files map[string][]byte) error {
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// fixTimes sets the time of everything under root to sourceDateEpoch.
func fixTimes(root string) error {
	t := time.Unix(sourceDateEpoch, 0)
	return filepath.Walk(root, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Chtimes(p, t, t)
	})
}
