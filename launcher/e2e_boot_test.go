package launcher_test

// End-to-end tests of the ways a VMI boots: from a disk or a CD-ROM,
// under BIOS or EFI (with secure boot too), on every bus, each asserting
// what the guest of testguest's bootable images reports against the spec.

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// bootNamespace holds the VMIs of these tests; it is short, as their
// names are: a VMI's sockets are in a folder named after both.
const bootNamespace = "vmi2libvirt-boot"

// bootImageTimeout bounds a boot from firmware under emulation: OVMF,
// GRUB reading a 20 MB image through the firmware, and the generic
// kernel, with other guests booting beside it on two cores.
const bootImageTimeout = 5 * time.Minute

// secondNetwork is the multus network of the two-NIC case, mapped to
// user-mode networking like the pod network.
const secondNetwork = "second"

var (
	bootImagesOnce sync.Once
	bootImagesErr  error
)

// needBootImages builds the bootable images into the default image store,
// or skips (fails under CI) without their tools and pieces.
func needBootImages(t testing.TB) {
	t.Helper()
	hosttest.Tools(t, testguest.BootTools...)
	hosttest.Files(t, testguest.DefaultGenericKernelTree+"/lib/modules", testguest.DefaultSignedBootTree+"/usr/lib/shim",
		testguest.DefaultGrubLib+"/i386-pc/boot_hybrid.img", testguest.DefaultGrubLib+"/x86_64-efi/kernel.img",
		hosttest.OVMFCode, "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd")
	bootImagesOnce.Do(func() {
		_, bootImagesErr = testguest.InstallBootImages(convert.DefaultImageStore, testguest.BootOptions{})
	})
	if bootImagesErr != nil {
		t.Fatalf("bootable images: %v", bootImagesErr)
	}
}

// bootVMI decodes a VMI of bootNamespace named name whose spec is the
// YAML spec (indented 2), with the images' references substituted for
// HYBRID and SECUREBOOT.
func bootVMI(t testing.TB, name, spec string) *v1.VirtualMachineInstance {
	t.Helper()
	spec = strings.NewReplacer("HYBRID", testguest.HybridRef, "SECUREBOOT", testguest.SecureBootRef).Replace(spec)
	return decodeVMI(t, fmt.Sprintf("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata:\n  name: %s\n  namespace: %s\nspec:\n  terminationGracePeriodSeconds: 0\n%s", name, bootNamespace, spec))
}

// bootCase is one way to boot: the VMI's spec and what its guest must
// report.
type bootCase struct {
	name  string
	spec  string
	check func(t *testing.T, r testguest.Report)
}

// bootCases are the boot paths, buses and firmware TestE2EBoot covers
// (the README's table names them). Each VMI has 512Mi: Debian's GRUB for
// EFI runs out of memory loading the kernel and initrd (18 MB) into a
// 256Mi guest.
var bootCases = []bootCase{
	{
		name: "BIOSVirtioDisk",
		spec: `  domain:
    memory: {guest: 512Mi}
    devices:
      disks:
      - name: boot
        serial: BIOS-VIRTIO
        disk: {bus: virtio}
  volumes:
  - name: boot
    containerDisk: {image: HYBRID}
`,
		check: func(t *testing.T, r testguest.Report) {
			wantBoot(t, r, "bios", "", "hybrid", "grub-pc")
			wantDisk(t, r, "BIOS-VIRTIO", "virtio", false)
		},
	},
	{
		name: "EFISATADisk",
		spec: `  domain:
    memory: {guest: 512Mi}
    firmware:
      bootloader:
        efi: {secureBoot: false}
    devices:
      disks:
      - name: boot
        serial: EFI-SATA
        disk: {bus: sata}
  volumes:
  - name: boot
    containerDisk: {image: HYBRID}
`,
		check: func(t *testing.T, r testguest.Report) {
			wantBoot(t, r, "efi", "disabled", "hybrid", "grub-efi")
			wantDisk(t, r, "EFI-SATA", "sata", false)
		},
	},
	{
		name: "EFISecureBootVirtioDisk",
		spec: `  domain:
    memory: {guest: 512Mi}
    features:
      smm: {enabled: true}
    firmware:
      bootloader:
        efi: {secureBoot: true}
    devices:
      disks:
      - name: boot
        serial: SB-VIRTIO
        disk: {bus: virtio}
  volumes:
  - name: boot
    containerDisk: {image: SECUREBOOT}
`,
		check: func(t *testing.T, r testguest.Report) {
			wantBoot(t, r, "efi", "enabled", "secureboot", "grub-efi")
			// Debian's kernel locks itself down under secure boot, and
			// then loads signed modules only: the virtio disk's driver
			// among them.
			if r.Lockdown != "integrity" {
				t.Errorf("lockdown %q, want integrity", r.Lockdown)
			}
			wantDisk(t, r, "SB-VIRTIO", "virtio", false)
		},
	},
	{
		// The disk comes first: the secure-boot image boots (here without
		// secure boot: shim starts GRUB all the same).
		name: "BootOrderDiskFirst",
		spec: bootOrderSpec(1, 2),
		check: func(t *testing.T, r testguest.Report) {
			wantBoot(t, r, "efi", "disabled", "secureboot", "grub-efi")
			wantDisk(t, r, "ORDER-DISK", "sata", false)
			wantCDROMs(t, r, "sata", 1)
		},
	},
	{
		// The CD-ROM comes first: the hybrid image boots from it.
		name: "BootOrderCDROMFirst",
		spec: bootOrderSpec(2, 1),
		check: func(t *testing.T, r testguest.Report) {
			wantBoot(t, r, "efi", "disabled", "hybrid", "grub-efi")
			wantDisk(t, r, "ORDER-DISK", "sata", false)
			wantCDROMs(t, r, "sata", 1)
		},
	},
	{
		// SeaBIOS boots the hybrid image's El Torito BIOS image from a
		// CD-ROM on virtio-scsi.
		name: "BIOSSCSICDROM",
		spec: `  domain:
    memory: {guest: 512Mi}
    devices:
      disks:
      - name: boot
        cdrom: {bus: scsi}
  volumes:
  - name: boot
    containerDisk: {image: HYBRID}
`,
		check: func(t *testing.T, r testguest.Report) {
			wantBoot(t, r, "bios", "", "hybrid", "grub-pc")
			wantCDROMs(t, r, "scsi", 1)
			if iso := r.ISO("TESTGUEST"); iso == nil || iso.BigFiles["boot/vmlinuz"] == 0 {
				t.Errorf("the boot CD-ROM's ISO: %+v", iso)
			} else if d := r.DiskByName(iso.Device); d == nil || !d.CDROM {
				t.Errorf("the boot ISO is on %+v, not a CD-ROM", d)
			}
		},
	},
	{
		// cloud-init's two sources as KubeVirt's default bus puts CD-ROMs:
		// SATA.
		name: "CloudInitCDROMsOnSATA",
		spec: `  domain:
    memory: {guest: 512Mi}
    devices:
      disks:
      - name: boot
        disk: {bus: virtio}
      - name: nocloud
        cdrom: {bus: sata}
      - name: configdrive
        cdrom: {bus: sata}
  volumes:
  - name: boot
    containerDisk: {image: HYBRID}
  - name: nocloud
    cloudInitNoCloud:
      userData: "#cloud-config\nhostname: nocloud-on-sata\n"
  - name: configdrive
    cloudInitConfigDrive:
      userData: "#cloud-config\nhostname: configdrive-on-sata\n"
`,
		check: func(t *testing.T, r testguest.Report) {
			wantBoot(t, r, "bios", "", "hybrid", "grub-pc")
			wantCDROMs(t, r, "sata", 2)
			wantISO(t, r, "cidata", "user-data", "hostname: nocloud-on-sata")
			wantISO(t, r, "config-2", "openstack/latest/user_data", "hostname: configdrive-on-sata")
		},
	},
	{
		// Boot from a virtio-scsi disk, beside a SCSI data disk and a
		// SCSI CD-ROM, whose address libvirt picks (KubeVirt pins disks
		// and LUNs to a unit, not CD-ROMs).
		name: "SCSIDiskAndCDROM",
		spec: `  domain:
    memory: {guest: 512Mi}
    devices:
      disks:
      - name: boot
        serial: SCSI-BOOT
        disk: {bus: scsi}
      - name: data
        serial: SCSI-DATA
        disk: {bus: scsi}
      - name: nocloud
        cdrom: {bus: scsi}
  volumes:
  - name: boot
    containerDisk: {image: HYBRID}
  - name: data
    emptyDisk: {capacity: 16Mi}
  - name: nocloud
    cloudInitNoCloud:
      userData: "#cloud-config\nhostname: nocloud-on-scsi\n"
`,
		check: func(t *testing.T, r testguest.Report) {
			wantBoot(t, r, "bios", "", "hybrid", "grub-pc")
			wantDisk(t, r, "SCSI-BOOT", "scsi", false)
			if d := wantDisk(t, r, "SCSI-DATA", "scsi", false); d != nil && d.Size != 16<<20 {
				t.Errorf("SCSI data disk is %d bytes, want %d", d.Size, 16<<20)
			}
			wantCDROMs(t, r, "scsi", 1)
			wantISO(t, r, "cidata", "user-data", "hostname: nocloud-on-scsi")
		},
	},
	{
		// Two NICs of two models with fixed MACs: the pod network and a
		// multus network, both user-mode networking on this host.
		name: "TwoNICs",
		spec: `  domain:
    memory: {guest: 512Mi}
    devices:
      disks:
      - name: boot
        disk: {bus: virtio}
      interfaces:
      - name: default
        masquerade: {}
        model: virtio
        macAddress: "02:00:00:00:0b:01"
      - name: second
        bridge: {}
        model: e1000e
        macAddress: "02:00:00:00:0b:02"
  networks:
  - name: default
    pod: {}
  - name: second
    multus: {networkName: ` + secondNetwork + `}
  volumes:
  - name: boot
    containerDisk: {image: HYBRID}
`,
		check: func(t *testing.T, r testguest.Report) {
			wantBoot(t, r, "bios", "", "hybrid", "grub-pc")
			if len(r.NICs) != 2 {
				t.Errorf("guest sees %d NICs, want 2: %+v", len(r.NICs), r.NICs)
			}
			for mac, driver := range map[string]string{"02:00:00:00:0b:01": "virtio_net", "02:00:00:00:0b:02": "e1000e"} {
				if n := r.NICByMAC(mac); n == nil || n.Driver != driver {
					t.Errorf("NIC %s: %+v, want driver %s (NICs %+v)", mac, n, driver, r.NICs)
				}
			}
		},
	},
	{
		// Every device area of the samples, and a USB disk: the guest
		// names each device its kernel bound.
		name: "EveryDevice",
		spec: `  domain:
    memory: {guest: 512Mi}
    devices:
      autoattachSerialConsole: true
      autoattachMemBalloon: true
      disks:
      - name: boot
        disk: {bus: virtio}
      - name: usb
        serial: USB-DATA
        disk: {bus: usb}
      rng: {}
      watchdog:
        name: watchdog0
        i6300esb: {action: poweroff}
      tpm: {}
      sound:
        name: audio
        model: ich9
      inputs:
      - name: tablet
        type: tablet
        bus: usb
  volumes:
  - name: boot
    containerDisk: {image: HYBRID}
  - name: usb
    emptyDisk: {capacity: 8Mi}
`,
		check: func(t *testing.T, r testguest.Report) {
			wantBoot(t, r, "bios", "", "hybrid", "grub-pc")
			if d := wantDisk(t, r, "USB-DATA", "usb", false); d != nil && d.Size != 8<<20 {
				t.Errorf("USB disk is %d bytes, want %d", d.Size, 8<<20)
			}
			for _, want := range []testguest.Device{
				{Kind: "serial", Detail: "ttyS0 16550A"},
				{Kind: "watchdog", Detail: "i6300ESB timer"},
				{Kind: "rng", Detail: "virtio_rng.0"},
				{Kind: "virtio", Detail: "virtio_rng"},
				{Kind: "tpm", Detail: "tpm0 version 2"},
				{Kind: "sound", Detail: "snd_hda_intel"},
				{Kind: "input", Detail: "QEMU QEMU USB Tablet"},
				{Kind: "virtio", Detail: "virtio_balloon"},
			} {
				found := false
				for _, d := range r.Devices {
					found = found || d == want
				}
				if !found {
					t.Errorf("guest reports no %s %q; devices %+v", want.Kind, want.Detail, r.Devices)
				}
			}
		},
	},
}

// bootOrderSpec is an EFI VMI with the secure-boot image as a SATA disk
// and the hybrid image as a SATA CD-ROM, with these boot orders.
func bootOrderSpec(disk, cdrom int) string {
	return fmt.Sprintf(`  domain:
    memory: {guest: 512Mi}
    firmware:
      bootloader:
        efi: {secureBoot: false}
    devices:
      disks:
      - name: disk
        serial: ORDER-DISK
        disk: {bus: sata}
        bootOrder: %d
      - name: cdrom
        cdrom: {bus: sata}
        bootOrder: %d
  volumes:
  - name: disk
    containerDisk: {image: SECUREBOOT}
  - name: cdrom
    containerDisk: {image: HYBRID}
`, disk, cdrom)
}

// wantBoot checks how the guest booted: the firmware, secure boot as the
// kernel saw it (EFI only), the image and GRUB's platform.
func wantBoot(t *testing.T, r testguest.Report, firmware, secureBoot, image, loader string) {
	t.Helper()
	if r.Firmware != firmware || r.SecureBoot != secureBoot {
		t.Errorf("firmware %q, secure boot %q; want %q, %q", r.Firmware, r.SecureBoot, firmware, secureBoot)
	}
	if got, _ := r.KernelArg(testguest.ImageArg); got != image {
		t.Errorf("booted image %q, want %q (command line %q)", got, image, r.Cmdline)
	}
	if got, _ := r.KernelArg(testguest.LoaderArg); got != loader {
		t.Errorf("booted by %q, want %q", got, loader)
	}
}

// wantDisk checks that the guest sees the disk with serial on bus, and
// returns it.
func wantDisk(t *testing.T, r testguest.Report, serial, bus string, cdrom bool) *testguest.Disk {
	t.Helper()
	d := r.DiskBySerial(serial)
	if d == nil {
		t.Errorf("guest sees no disk with serial %s: %+v", serial, r.Disks)
		return nil
	}
	if d.Bus != bus || d.CDROM != cdrom {
		t.Errorf("disk %s (%s) on bus %q, CD-ROM %v; want %q, %v", serial, d.Name, d.Bus, d.CDROM, bus, cdrom)
	}
	return d
}

// wantCDROMs checks that the guest sees n CD-ROM drives, all on bus.
func wantCDROMs(t *testing.T, r testguest.Report, bus string, n int) {
	t.Helper()
	var got []testguest.Disk
	for _, d := range r.Disks {
		if d.CDROM {
			got = append(got, d)
			if d.Bus != bus {
				t.Errorf("CD-ROM %s on bus %q, want %q", d.Name, d.Bus, bus)
			}
		}
	}
	if len(got) != n {
		t.Errorf("guest sees %d CD-ROMs, want %d: %+v", len(got), n, r.Disks)
	}
}

// wantISO checks that an ISO labelled label holds file, containing text.
func wantISO(t *testing.T, r testguest.Report, label, file, text string) {
	t.Helper()
	iso := r.ISO(label)
	if iso == nil {
		t.Errorf("guest sees no ISO labelled %s: %+v", label, r.ISOs)
		return
	}
	if d := r.DiskByName(iso.Device); d == nil || !d.CDROM {
		t.Errorf("ISO %s is on %s, not a CD-ROM: %+v", label, iso.Device, d)
	}
	if got := string(iso.Files[file]); !strings.Contains(got, text) {
		t.Errorf("%s on ISO %s = %q, want it to hold %q", file, label, got, text)
	}
}

// newBootEnv is newEnv with the second network of the two-NIC case mapped.
func newBootEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, func(c *launcher.Config) {
		c.Layout.Networks = map[string]convert.InterfaceAttachment{secondNetwork: {Type: "user"}}
	})
}

// TestE2EBoot boots each of bootCases through the launcher, under
// emulation, and checks what its guest reports; and checks that secure
// boot refuses the hybrid image, whose GRUB is not signed.
//
//	go test ./launcher -run TestE2EBoot -v
func TestE2EBoot(t *testing.T) {
	e := newBootEnv(t)
	needBootImages(t)
	t.Run("group", func(t *testing.T) {
		for _, c := range bootCases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				vmi := bootVMI(t, uniqueName(strings.ToLower(c.name)), c.spec)
				start := time.Now()
				e.sync(t, vmi)
				r := e.waitConsole(t, vmi, bootImageTimeout)
				t.Logf("%s reported %.1fs after Sync", vmi.Name, time.Since(start).Seconds())
				c.check(t, r)
				if t.Failed() {
					t.Logf("console of %s:\n%s", vmi.Name, e.serialLog(vmi))
				}
			})
		}
		t.Run("SecureBootRefusesUnsigned", func(t *testing.T) {
			t.Parallel()
			testSecureBootRefusesUnsigned(t, e)
		})
	})
}

// testSecureBootRefusesUnsigned boots the hybrid image, which boots under
// EFI without secure boot (EFISATADisk), with secure boot on: OVMF must
// refuse its unsigned GRUB, and the guest never reports.
func testSecureBootRefusesUnsigned(t *testing.T, e *env) {
	vmi := bootVMI(t, uniqueName("sb-unsigned"), `  domain:
    memory: {guest: 512Mi}
    features:
      smm: {enabled: true}
    firmware:
      bootloader:
        efi: {secureBoot: true}
    devices:
      disks:
      - name: boot
        serial: SB-UNSIGNED
        disk: {bus: sata}
  volumes:
  - name: boot
    containerDisk: {image: HYBRID}
`)
	e.sync(t, vmi)
	// OVMF's boot manager says so on the serial console: "BdsDxe: failed
	// to load Boot0001 "UEFI QEMU HARDDISK SB-UNSIGNED " from ...: Access
	// Denied".
	e.waitLine(t, vmi, "Access Denied", bootImageTimeout)
	log := e.serialLog(vmi)
	refused := false
	for _, line := range strings.Split(log, "\n") {
		refused = refused || strings.Contains(line, "failed to load") && strings.Contains(line, "SB-UNSIGNED") && strings.Contains(line, "Access Denied")
	}
	if !refused {
		t.Errorf("OVMF denied something, but not the disk SB-UNSIGNED:\n%s", log)
	}
	if strings.Contains(log, testguest.BeginMarker) || strings.Contains(log, "Welcome to GRUB") {
		t.Errorf("the unsigned GRUB ran under secure boot:\n%s", log)
	}
}
