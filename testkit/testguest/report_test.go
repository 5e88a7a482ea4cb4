package testguest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// transcript is a console capture in the shape the guest prints (taken
// from a real boot under QEMU, shortened), with CRLF line ends, firmware
// noise before the report and a kernel line inside it.
const transcript = "SeaBIOS (version 1.16.2-debian-1.16.2-1)\r\n" +
	"Booting from ROM...\r\n" +
	BeginMarker + "\r\n" +
	"cpus 2\r\n" +
	"memtotal_kib 223360\r\n" +
	"disk vda serial=disk-one size=67108864\r\n" +
	"disk vdb serial= size=71680\r\n" +
	"[    3.1] random kernel line\r\n" +
	"nic eth0 mac=52:54:00:12:34:56\r\n" +
	"nic eth1 mac=02:00:00:AA:BB:CC\r\n" +
	"iso vdb label=cidata\r\n" +
	"file empty\r\n" +
	"endfile\r\n" +
	"file user-data\r\n" +
	"b64 I2Nsb3VkLWNvbmZpZwpo\r\n" +
	"b64 ZWxsbzogd29ybGQK\r\n" +
	"endfile\r\n" +
	"iso sr0 label=config 2 with spaces\r\n" +
	"file openstack/latest/user_data\r\n" +
	"b64 eA==\r\n" +
	"endfile\r\n" +
	EndMarker + "\r\n" +
	"[    4.099264] reboot: Power down\r\n"

func TestParseConsole(t *testing.T) {
	r, err := ParseConsole(transcript)
	if err != nil {
		t.Fatal(err)
	}
	if r.CPUs != 2 || r.MemTotalKiB != 223360 {
		t.Errorf("cpus %d mem %d", r.CPUs, r.MemTotalKiB)
	}
	if len(r.Disks) != 2 || r.Disks[0] != (Disk{Name: "vda", Serial: "disk-one", Size: 64 << 20}) || r.Disks[1] != (Disk{Name: "vdb", Size: 71680}) {
		t.Errorf("disks %+v", r.Disks)
	}
	if d := r.DiskBySerial("disk-one"); d == nil || d.Name != "vda" {
		t.Errorf("DiskBySerial: %+v", d)
	}
	if len(r.NICs) != 2 || r.NICs[1] != (NIC{Name: "eth1", MAC: "02:00:00:aa:bb:cc"}) {
		t.Errorf("nics %+v", r.NICs)
	}
	if ud, ok := r.UserData(); !ok || ud != "#cloud-config\nhello: world\n" {
		t.Errorf("user-data %q %v", ud, ok)
	}
	ci := r.ISO("cidata")
	if ci == nil || len(ci.Files) != 2 || ci.Files["empty"] == nil && len(ci.Files["empty"]) != 0 {
		t.Errorf("cidata iso %+v", ci)
	}
	if cd := r.ISO("config 2 with spaces"); cd == nil || string(cd.Files["openstack/latest/user_data"]) != "x" {
		t.Errorf("second iso %+v", cd)
	}
}

func TestParseConsoleTakesLastReport(t *testing.T) {
	first := BeginMarker + "\ncpus 1\n" + EndMarker + "\n"
	r, err := ParseConsole(first + transcript)
	if err != nil || r.CPUs != 2 {
		t.Fatalf("got %d, %v; want the second report", r.CPUs, err)
	}
}

func TestParseConsoleErrors(t *testing.T) {
	cases := map[string]string{
		"no report":       "SeaBIOS\r\nBooting\r\n",
		"unfinished":      BeginMarker + "\ncpus 2\n",
		"bad number":      BeginMarker + "\ncpus two\n" + EndMarker + "\n",
		"disk no size":    BeginMarker + "\ndisk vda serial=x\n" + EndMarker + "\n",
		"file before iso": BeginMarker + "\nfile x\nendfile\n" + EndMarker + "\n",
		"bad base64":      BeginMarker + "\niso vdb label=x\nfile x\nb64 !!!\nendfile\n" + EndMarker + "\n",
		"open file":       BeginMarker + "\niso vdb label=x\nfile x\nb64 eA==\n" + EndMarker + "\n",
		"diskbus first":   BeginMarker + "\ndiskbus sda bus=sata type=disk\n" + EndMarker + "\n",
		"nicdriver first": BeginMarker + "\nnicdriver eth0 driver=e1000e\n" + EndMarker + "\n",
		"bigfile no iso":  BeginMarker + "\nbigfile 9 x\n" + EndMarker + "\n",
		"bigfile size":    BeginMarker + "\niso sr0 label=x\nbigfile nine x\n" + EndMarker + "\n",
	}
	for name, text := range cases {
		if _, err := ParseConsole(text); err == nil {
			t.Errorf("%s: no error", name)
		} else if !strings.HasPrefix(err.Error(), "testguest: ") {
			t.Errorf("%s: error %q lacks the package prefix", name, err)
		}
	}
}

// bootTranscript is the report of a bootable image's guest (a real boot
// under QEMU with secure boot, shortened), with the lines the first
// format lacked.
const bootTranscript = "BdsDxe: starting Boot0001 \"UEFI QEMU HARDDISK sbsata \"\r\n" +
	BeginMarker + "\r\n" +
	"cpus 1\r\n" +
	"memtotal_kib 431552\r\n" +
	"disk sda serial=sbsata size=26214400\r\n" +
	"disk sr0 serial= size=372736\r\n" +
	"nic eth0 mac=52:54:00:12:34:56\r\n" +
	"nic eth1 mac=02:00:00:00:0B:02\r\n" +
	"firmware efi\r\n" +
	"secureboot enabled\r\n" +
	"lockdown integrity\r\n" +
	"cmdline BOOT_IMAGE=/vmlinuz console=ttyS0 quiet testguest.action=poweroff testguest.image=secureboot testguest.loader=grub-efi\r\n" +
	"diskbus sda bus=sata type=disk\r\n" +
	"diskbus sr0 bus=sata type=cdrom\r\n" +
	"nicdriver eth0 driver=virtio_net\r\n" +
	"nicdriver eth1 driver=e1000e\r\n" +
	"device virtio virtio_net\r\n" +
	"device input QEMU QEMU USB Tablet\r\n" +
	"device tpm tpm0 version 2\r\n" +
	"iso sr0 label=TESTGUEST\r\n" +
	"file boot/grub/grub.cfg\r\n" +
	"b64 c2V0IHRpbWVvdXQ9MAo=\r\n" +
	"endfile\r\n" +
	"bigfile 8247232 boot/vmlinuz\r\n" +
	EndMarker + "\r\n"

func TestParseConsoleBootLines(t *testing.T) {
	r, err := ParseConsole(bootTranscript)
	if err != nil {
		t.Fatal(err)
	}
	if r.Firmware != "efi" || r.SecureBoot != "enabled" || r.Lockdown != "integrity" {
		t.Errorf("firmware %q secure boot %q lockdown %q", r.Firmware, r.SecureBoot, r.Lockdown)
	}
	if v, ok := r.KernelArg(ImageArg); !ok || v != "secureboot" {
		t.Errorf("%s = %q, %v", ImageArg, v, ok)
	}
	if _, ok := r.KernelArg("testguest"); ok {
		t.Error("KernelArg matched a prefix")
	}
	if d := r.DiskByName("sda"); d == nil || d.Bus != "sata" || d.CDROM || d.Serial != "sbsata" {
		t.Errorf("sda %+v", d)
	}
	if d := r.DiskByName("sr0"); d == nil || d.Bus != "sata" || !d.CDROM {
		t.Errorf("sr0 %+v", d)
	}
	if n := r.NICByMAC("02:00:00:00:0b:02"); n == nil || n.Driver != "e1000e" || n.Name != "eth1" {
		t.Errorf("second NIC %+v", n)
	}
	if got := r.DevicesOf("input"); len(got) != 1 || got[0] != "QEMU QEMU USB Tablet" {
		t.Errorf("inputs %q", got)
	}
	if got := r.DevicesOf("tpm"); len(got) != 1 || got[0] != "tpm0 version 2" {
		t.Errorf("tpms %q", got)
	}
	iso := r.ISO("TESTGUEST")
	if iso == nil || string(iso.Files["boot/grub/grub.cfg"]) != "set timeout=0\n" || iso.BigFiles["boot/vmlinuz"] != 8247232 || len(iso.Files) != 1 {
		t.Errorf("iso %+v", iso)
	}
	// A guest of the first format leaves the new fields empty.
	old, err := ParseConsole(transcript)
	if err != nil {
		t.Fatal(err)
	}
	if old.Firmware != "" || old.Disks[0].Bus != "" || old.NICs[0].Driver != "" || len(old.Devices) != 0 {
		t.Errorf("first format: %+v", old)
	}
}

// FuzzParseConsole: any console text parses to a report or an error with
// the package's prefix, never a panic.
func FuzzParseConsole(f *testing.F) {
	f.Add(transcript)
	f.Add(bootTranscript)
	f.Add(BeginMarker + "\ndiskbus sda bus=sata type=disk\n" + EndMarker + "\n")
	f.Fuzz(func(t *testing.T, text string) {
		if _, err := ParseConsole(text); err != nil && !strings.HasPrefix(err.Error(), "testguest: ") {
			t.Errorf("error %q lacks the package prefix", err)
		}
	})
}

// TestInitScriptBigFile: the script's limit is BigFile.
func TestInitScriptBigFile(t *testing.T) {
	if want := fmt.Sprintf(`if [ "$size" -gt %d ]; then # BigFile`, BigFile); !strings.Contains(initScript, want) {
		t.Errorf("the init script lacks %q", want)
	}
}

// TestParseConsoleShares: "share TAG" lines carry the files of a virtiofs
// mount as "iso" lines do; "share TAG failed" one that did not mount.
func TestParseConsoleShares(t *testing.T) {
	r, err := ParseConsole(BeginMarker + "\n" +
		"iso sr0 label=cidata\nfile user-data\nb64 eA==\nendfile\n" +
		"share data\nfile hello.txt\nb64 aGVsbG8K\nendfile\nbigfile 70000 big.img\n" +
		"share gone failed\n" + EndMarker + "\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Shares) != 2 || len(r.ISOs) != 1 || len(r.ISOs[0].Files) != 1 {
		t.Fatalf("shares %+v, isos %+v", r.Shares, r.ISOs)
	}
	if s := r.Share("data"); s == nil || s.Failed || string(s.Files["hello.txt"]) != "hello\n" || s.BigFiles["big.img"] != 70000 {
		t.Errorf("share data: %+v", s)
	}
	if s := r.Share("gone"); s == nil || !s.Failed || len(s.Files) != 0 {
		t.Errorf("share gone: %+v", s)
	}
}

// TestParseConsoleMetrics: the metrics document between "metrics PORT"
// and "endmetrics", base64 encoded.
func TestParseConsoleMetrics(t *testing.T) {
	r, err := ParseConsole(BeginMarker + "\nmetrics vport1p2\nb64 PG1ldHJpY3M+Cjwv\nb64 bWV0cmljcz4K\nendmetrics\ncpus 1\n" + EndMarker + "\n")
	if err != nil {
		t.Fatal(err)
	}
	if r.Metrics != "<metrics>\n</metrics>\n" || r.CPUs != 1 {
		t.Errorf("metrics %q, cpus %d", r.Metrics, r.CPUs)
	}
}

// TestBootIDs: the boot IDs of each report of a log appended across boots,
// each once, and none from outside a report (a shell's echo of the word).
func TestBootIDs(t *testing.T) {
	boot := func(id string) string {
		return "[    0.000000] Linux version\r\n" + BeginMarker + "\r\ncpus 1\r\nbootid " + id + "\r\n" + EndMarker + "\r\n"
	}
	log := boot("aaaa-1") + "/ # echo bootid xyz\r\nbootid xyz\r\n" + boot("bbbb-2") + boot("bbbb-2")
	if got := BootIDs(log); !slices.Equal(got, []string{"aaaa-1", "bbbb-2"}) {
		t.Errorf("BootIDs = %q, want [aaaa-1 bbbb-2]", got)
	}
	if got := BootIDs(transcript); len(got) != 0 {
		t.Errorf("BootIDs of a report without the line = %q", got)
	}
	r, err := ParseConsole(boot("cccc-3"))
	if err != nil || r.BootID != "cccc-3" {
		t.Errorf("ParseConsole: BootID %q, %v; want cccc-3", r.BootID, err)
	}
}
