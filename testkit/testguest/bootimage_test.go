package testguest

import (
	"bytes"
	"debug/pe"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
)

// needBootPieces skips unless the tools and files BootImages needs are
// there; under CI their absence fails the test.
func needBootPieces(t *testing.T) {
	t.Helper()
	hosttest.Tools(t, BootTools...)
	hosttest.Files(t, filepath.Join(DefaultGenericKernelTree, "lib", "modules"), DefaultBusybox,
		filepath.Join(DefaultSignedBootTree, signedShim), filepath.Join(DefaultSignedBootTree, signedGrub),
		filepath.Join(DefaultGrubLib, "i386-pc", "boot_hybrid.img"), filepath.Join(DefaultGrubLib, "x86_64-efi", "kernel.img"))
}

// bootImages builds the images once per test binary.
var bootImagesBuilt []BootImage

func builtBootImages(t *testing.T) map[string]BootImage {
	t.Helper()
	needBootPieces(t)
	if bootImagesBuilt == nil {
		images, err := BootImages(BootOptions{})
		if err != nil {
			t.Fatal(err)
		}
		bootImagesBuilt = images
	}
	out := map[string]BootImage{}
	for _, bi := range bootImagesBuilt {
		out[bi.Name] = bi
	}
	return out
}

// TestBootImagesAreReproducible builds the images twice: the same bytes.
func TestBootImagesAreReproducible(t *testing.T) {
	first := builtBootImages(t)
	again, err := BootImages(BootOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(again) != 2 {
		t.Fatalf("%d images, want 2", len(again))
	}
	for _, bi := range again {
		if !bytes.Equal(bi.Disk, first[bi.Name].Disk) {
			t.Errorf("%s: two builds differ", bi.Name)
		}
	}
}

// mbrPartition is one primary partition of an MBR.
type mbrPartition struct {
	typ          byte
	start, count uint32 // sectors
}

func readMBR(t *testing.T, disk []byte) []mbrPartition {
	t.Helper()
	if len(disk) < 512 || disk[510] != 0x55 || disk[511] != 0xaa {
		t.Fatal("no MBR boot signature")
	}
	var parts []mbrPartition
	for i := range 4 {
		e := disk[0x1be+16*i : 0x1be+16*(i+1)]
		if e[4] != 0 {
			parts = append(parts, mbrPartition{typ: e[4], start: binary.LittleEndian.Uint32(e[8:]), count: binary.LittleEndian.Uint32(e[12:])})
		}
	}
	return parts
}

// espFile reads a file of the FAT file system at sector start of disk
// (written to a file) with mtools.
func espFile(t *testing.T, diskPath string, start uint32, name string) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	cmd := exec.Command("mcopy", "-n", "-i", diskPath+"@@"+strconv.FormatInt(int64(start)*512, 10), "::"+name, out)
	cmd.Env = append(os.Environ(), "MTOOLS_SKIP_CHECK=1")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mcopy %s: %v: %s", name, err, b)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// signed tells whether a PE file carries an Authenticode signature (a
// certificate table).
func signed(t *testing.T, what string, data []byte) bool {
	t.Helper()
	f, err := pe.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s is not a PE file: %v", what, err)
	}
	oh, ok := f.OptionalHeader.(*pe.OptionalHeader64)
	if !ok {
		t.Fatalf("%s is not a 64-bit PE file", what)
	}
	return len(oh.DataDirectory) > pe.IMAGE_DIRECTORY_ENTRY_SECURITY && oh.DataDirectory[pe.IMAGE_DIRECTORY_ENTRY_SECURITY].Size > 0
}

// TestBootImageLayouts reads the images back: the hybrid one is an ISO9660
// file system with an MBR and an appended EFI system partition whose
// removable-media loader is an unsigned GRUB; the secure-boot one has one
// EFI system partition holding the signed shim, the signed GRUB and the
// signed kernel, byte for byte what Debian ships, and GRUB's config names
// the image on the kernel's command line.
func TestBootImageLayouts(t *testing.T) {
	images := builtBootImages(t)
	dir := t.TempDir()

	hybrid := images["hybrid"].Disk
	if string(hybrid[0x8001:0x8006]) != "CD001" {
		t.Error("hybrid image: no ISO9660 volume descriptor")
	}
	parts := readMBR(t, hybrid)
	if len(parts) != 2 || parts[1].typ != 0xef {
		t.Fatalf("hybrid image partitions %+v, want the ISO and an EFI system partition", parts)
	}
	hybridPath := filepath.Join(dir, "hybrid.img")
	if err := os.WriteFile(hybridPath, hybrid, 0o600); err != nil {
		t.Fatal(err)
	}
	if grub := espFile(t, hybridPath, parts[1].start, "/EFI/BOOT/BOOTX64.EFI"); signed(t, "hybrid's GRUB", grub) {
		t.Error("hybrid image's GRUB is signed; secure boot would not refuse it")
	}

	sb := images["secureboot"].Disk
	parts = readMBR(t, sb)
	if len(parts) != 1 || parts[0].typ != 0xef || parts[0].start != partitionStart || int(parts[0].start+parts[0].count)*512 != len(sb) {
		t.Fatalf("secure-boot image partitions %+v (disk %d bytes), want one EFI system partition from sector %d to the end", parts, len(sb), partitionStart)
	}
	sbPath := filepath.Join(dir, "secureboot.img")
	if err := os.WriteFile(sbPath, sb, 0o600); err != nil {
		t.Fatal(err)
	}
	version, err := kernelVersion(DefaultGenericKernelTree)
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{
		"/EFI/BOOT/BOOTX64.EFI": filepath.Join(DefaultSignedBootTree, signedShim),
		"/EFI/BOOT/grubx64.efi": filepath.Join(DefaultSignedBootTree, signedGrub),
		"/vmlinuz":              filepath.Join(DefaultGenericKernelTree, "boot", "vmlinuz-"+version),
	} {
		want, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		got := espFile(t, sbPath, partitionStart, name)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %d bytes, not those of %s", name, len(got), src)
		}
		if !signed(t, name, got) {
			t.Errorf("%s is not signed", name)
		}
	}
	if cfg := string(espFile(t, sbPath, partitionStart, "/EFI/debian/grub.cfg")); !strings.Contains(cfg, ImageArg+"=secureboot") || !strings.Contains(cfg, ActionPowerOff) {
		t.Errorf("secure-boot grub.cfg:\n%s", cfg)
	}
}
