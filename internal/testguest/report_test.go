package testguest

import (
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
	}
	for name, text := range cases {
		if _, err := ParseConsole(text); err == nil {
			t.Errorf("%s: no error", name)
		} else if !strings.HasPrefix(err.Error(), "testguest: ") {
			t.Errorf("%s: error %q lacks the package prefix", name, err)
		}
	}
}
