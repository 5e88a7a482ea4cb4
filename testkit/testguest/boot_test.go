package testguest

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vmi2libvirt/vmi2libvirt/imagestore"
	"github.com/vmi2libvirt/vmi2libvirt/internal/iso"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
)

// guest is one QEMU process running the test guest under TCG.
type guest struct {
	cmd     *exec.Cmd
	serial  string // file the serial console is written to
	monitor string // HMP monitor socket
	done    chan error
	started time.Time
}

// needQEMU skips unless qemu-system-x86_64, the kernel tree and busybox
// are there; under CI their absence fails the test.
func needQEMU(t *testing.T) {
	t.Helper()
	hosttest.Tools(t, "qemu-system-x86_64")
	hosttest.Files(t, filepath.Join(DefaultKernelTree, "lib", "modules"), DefaultBusybox)
}

// boot starts the guest with disks (raw files, virtio-blk, with serials) and
// one virtio NIC. Always TCG: nested KVM hangs guests on the test machines.
func boot(t *testing.T, img *imagestore.Image, action string, disks map[string]string, mac string) *guest {
	t.Helper()
	dir := t.TempDir()
	kernel, err := img.HostPath(KernelPath)
	if err != nil {
		t.Fatal(err)
	}
	initrd, err := img.HostPath(InitrdPath)
	if err != nil {
		t.Fatal(err)
	}
	g := &guest{serial: filepath.Join(dir, "serial.log"), monitor: filepath.Join(dir, "mon.sock"), done: make(chan error, 1)}
	args := []string{
		"-accel", "tcg", "-machine", "q35", "-m", "256", "-smp", "2",
		"-nodefaults", "-display", "none", "-no-reboot",
		"-kernel", kernel, "-initrd", initrd,
		"-append", KernelArgs + " " + action,
		"-serial", "file:" + g.serial, "-monitor", "unix:" + g.monitor + ",server,nowait",
		"-netdev", "user,id=n0", "-device", "virtio-net-pci,netdev=n0,mac=" + mac,
	}
	i := 0
	for serial, file := range disks {
		id := "d" + string(rune('0'+i))
		args = append(args, "-drive", "file="+file+",if=none,format=raw,id="+id, "-device", "virtio-blk-pci,drive="+id+",serial="+serial)
		i++
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	g.cmd = exec.CommandContext(ctx, "qemu-system-x86_64", args...)
	out := &strings.Builder{}
	g.cmd.Stdout, g.cmd.Stderr = out, out
	g.started = time.Now()
	if err := g.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { g.done <- g.cmd.Wait() }()
	t.Cleanup(func() {
		_ = g.cmd.Process.Kill()
		if t.Failed() {
			log, _ := os.ReadFile(g.serial)
			t.Logf("qemu output: %s\nconsole:\n%s", out, log)
		}
	})
	return g
}

// waitFor waits until the console shows s.
func (g *guest) waitFor(t *testing.T, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if b, _ := os.ReadFile(g.serial); strings.Contains(string(b), s) {
			return
		}
		select {
		case err := <-g.done:
			t.Fatalf("guest ended (%v) before printing %q", err, s)
		case <-time.After(100 * time.Millisecond):
		}
	}
	t.Fatalf("guest did not print %q within %v", s, timeout)
}

// exited waits up to timeout for QEMU to end; false if it still runs.
func (g *guest) exited(t *testing.T, timeout time.Duration) bool {
	select {
	case err := <-g.done:
		if err != nil {
			t.Errorf("qemu: %v", err)
		}
		return true
	case <-time.After(timeout):
		return false
	}
}

func (g *guest) powerButton(t *testing.T) {
	t.Helper()
	c, err := net.Dial("unix", g.monitor)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("system_powerdown\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
}

// TestBootUnderEmulation boots the guest under QEMU (TCG) three times: it
// checks the report against what QEMU was given and that the guest powers
// off on its own, on the ACPI power button, or ignores the button, as its
// kernel argument asks.
func TestBootUnderEmulation(t *testing.T) {
	needQEMU(t)
	img, err := Install(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	userData := "#cloud-config\npassword: <&\"quoted\">\n"
	ci, err := iso.Build("cidata", []iso.File{
		{Path: "user-data", Data: []byte(userData)},
		{Path: "meta-data", Data: []byte("instance-id: default.testvm\nlocal-hostname: testvm\n")},
	})
	if err != nil {
		t.Fatal(err)
	}
	ciPath, diskPath := filepath.Join(work, "cidata.iso"), filepath.Join(work, "disk.img")
	if err := os.WriteFile(ciPath, ci, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(diskPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(diskPath, 3<<20); err != nil {
		t.Fatal(err)
	}
	disks := map[string]string{"data-disk-1": diskPath, "cloudinit": ciPath}

	t.Run("report and poweroff", func(t *testing.T) {
		g := boot(t, img, ActionPowerOff, disks, "52:54:00:12:34:56")
		if !g.exited(t, 80*time.Second) {
			t.Fatal("guest did not power off")
		}
		t.Logf("boot, report and power-off took %v under TCG", time.Since(g.started).Round(100*time.Millisecond))
		text, _ := os.ReadFile(g.serial)
		r, err := ParseConsole(string(text))
		if err != nil {
			t.Fatal(err)
		}
		if r.CPUs != 2 {
			t.Errorf("cpus %d, want 2", r.CPUs)
		}
		if ids := BootIDs(string(text)); len(r.BootID) != 36 || !slices.Equal(ids, []string{r.BootID}) {
			t.Errorf("boot ID %q, boot IDs of the log %q: want one UUID", r.BootID, ids)
		}
		if r.MemTotalKiB < 180<<10 || r.MemTotalKiB > 256<<10 {
			t.Errorf("MemTotal %d KiB for 256 MiB of RAM", r.MemTotalKiB)
		}
		if d := r.DiskBySerial("data-disk-1"); d == nil || d.Size != 3<<20 {
			t.Errorf("data disk: %+v (disks %+v)", d, r.Disks)
		}
		if d := r.DiskBySerial("cloudinit"); d == nil || d.Size != int64(len(ci)) {
			t.Errorf("cloud-init disk: %+v", d)
		}
		if len(r.NICs) != 1 || r.NICs[0].MAC != "52:54:00:12:34:56" {
			t.Errorf("nics %+v", r.NICs)
		}
		if ud, ok := r.UserData(); !ok || ud != userData {
			t.Errorf("user-data %q (found %v)", ud, ok)
		}
		if md := string(r.ISO("cidata").Files["meta-data"]); !strings.Contains(md, "local-hostname: testvm") {
			t.Errorf("meta-data %q", md)
		}
	})

	t.Run("acpi", func(t *testing.T) {
		g := boot(t, img, ActionACPI, nil, "52:54:00:00:00:01")
		g.waitFor(t, "testguest: waiting for the ACPI power button", 80*time.Second)
		g.powerButton(t)
		if !g.exited(t, 20*time.Second) {
			t.Fatal("guest did not power off on the ACPI power button")
		}
		if text, _ := os.ReadFile(g.serial); !strings.Contains(string(text), "testguest: power button") {
			t.Error("guest powered off without acpid seeing the power button")
		}
	})

	t.Run("ignore", func(t *testing.T) {
		g := boot(t, img, ActionIgnore, nil, "52:54:00:00:00:02")
		g.waitFor(t, "testguest: ignoring ACPI", 80*time.Second)
		g.powerButton(t)
		if g.exited(t, 5*time.Second) {
			t.Fatal("guest powered off although it should ignore ACPI")
		}
	})
}
