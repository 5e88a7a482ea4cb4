package launcher_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// faultsEnv is the variable that allows the fault tests outside CI: they
// restart the host's libvirtd, which disturbs anyone else using it.
const faultsEnv = "VMI2LIBVIRT_E2E_FAULTS"

// TestE2ELibvirtdRestart restarts libvirtd under two running VMIs while
// Watch is open, and kills one VMI's QEMU while libvirtd is down. The
// launcher must reconnect, report the killed VMI Failed (the change made
// while it was disconnected is not lost), keep the other Running, and
// stop it gracefully over the new connection.
func TestE2ELibvirtdRestart(t *testing.T) {
	if os.Getenv("CI") == "" && os.Getenv(faultsEnv) == "" {
		t.Skipf("restarts the host's libvirtd; set %s=1 to run it (CI runs it)", faultsEnv)
	}
	hosttest.LockLibvirt(t, true)
	exclusive = true
	defer func() { exclusive = false }()
	e := newEnv(t)
	ctx := context.Background()
	keep := guestVMI(t, uniqueName("e2e-restart-keep"), 30, testguest.ActionACPI)
	kill := guestVMI(t, uniqueName("e2e-restart-kill"), 30, testguest.ActionACPI)
	for _, vmi := range []*v1.VirtualMachineInstance{keep, kill} {
		e.sync(t, vmi)
	}
	for _, vmi := range []*v1.VirtualMachineInstance{keep, kill} {
		e.waitLine(t, vmi, "waiting for the ACPI power button", bootTimeout)
	}
	qemuPid := readQEMUPid(t, kill)

	restartLibvirtd(t, func() {
		if err := syscall.Kill(qemuPid, syscall.SIGKILL); err != nil {
			t.Errorf("kill QEMU %d: %v", qemuPid, err)
		}
		// Calls while libvirtd is away fail or wait for their context;
		// they do not hang.
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		start := time.Now()
		if _, err := e.l.Status(cctx, keep); err == nil {
			t.Errorf("Status while libvirtd is down succeeded")
		}
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("Status while libvirtd is down took %s", took)
		}
	})

	ev := e.watch.waitPhase(t, kill.Name, v1.Failed, 30*time.Second)
	wantEnd(t, ev, "Crashed")
	st, err := e.l.Status(ctx, keep)
	if err != nil {
		t.Fatalf("Status after the restart: %v", err)
	}
	if st.Phase != v1.Running {
		t.Errorf("VMI that kept running is %s after the restart", st.Phase)
	}
	if c := condition(st, v1.VirtualMachineInstanceReady); c == nil || c.Status != k8sv1.ConditionTrue {
		t.Errorf("Ready after the restart: %+v", c)
	}
	if err := e.l.Stop(ctx, keep); err != nil {
		t.Fatalf("Stop after the restart: %v", err)
	}
	wantEnd(t, e.watch.waitPhase(t, keep.Name, v1.Succeeded, 10*time.Second), "GuestShutdown")
}

// readQEMUPid returns the pid of the QEMU process of vmi's domain.
func readQEMUPid(t *testing.T, vmi *v1.VirtualMachineInstance) int {
	t.Helper()
	pidFile := "/run/libvirt/qemu/" + domainName(vmi) + ".pid"
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("QEMU pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 1 {
		t.Fatalf("QEMU pid file %s holds %q", pidFile, raw)
	}
	return pid
}

// restartLibvirtd stops libvirtd, runs during, and starts it again: with
// systemctl where systemd runs it, else by signal and `libvirtd -d` (as
// .ci/prepare-host.sh starts it).
func restartLibvirtd(t *testing.T, during func()) {
	t.Helper()
	systemd := exec.Command("systemctl", "is-active", "--quiet", "libvirtd").Run() == nil
	if systemd {
		run(t, "systemctl", "stop", "libvirtd.service", "libvirtd.socket", "libvirtd-ro.socket", "libvirtd-admin.socket")
	} else {
		raw, err := os.ReadFile("/run/libvirtd.pid")
		if err != nil {
			t.Fatalf("libvirtd pid: %v", err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil {
			t.Fatalf("libvirtd pid file holds %q", raw)
		}
		if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
			t.Fatalf("stop libvirtd: %v", err)
		}
		for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("libvirtd %d did not stop", pid)
			}
		}
	}
	during()
	if systemd {
		run(t, "systemctl", "start", "libvirtd.socket", "libvirtd-ro.socket", "libvirtd-admin.socket", "libvirtd.service")
	} else {
		run(t, "libvirtd", "-d")
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if c, err := libvirt.NewConnect(testURI); err == nil {
			_, _ = c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("libvirtd does not answer after its restart")
		}
	}
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// TestE2EParallelSync syncs 10 different VMIs at once: all must come up
// Running and Ready, each with its own domain.
func TestE2EParallelSync(t *testing.T) {
	e := newEnv(t)
	const n = 10
	vmis := make([]*v1.VirtualMachineInstance, n)
	errs := make(chan error, n)
	start := time.Now()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		done := make(chan error, n)
		for _, vmi := range vmis {
			go func() { done <- e.l.Delete(ctx, vmi) }()
		}
		for range n {
			if err := <-done; err != nil {
				t.Errorf("Delete: %v", err)
			}
		}
	})
	for i := range vmis {
		vmis[i] = guestVMI(t, uniqueName("e2e-par-"+strconv.Itoa(i)), 0, testguest.ActionIgnore)
		vmi := vmis[i]
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			errs <- e.l.Sync(ctx, vmi)
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("Sync: %v", err)
		}
	}
	t.Logf("%d Syncs returned after %s", n, time.Since(start))
	for _, vmi := range vmis {
		e.watch.waitFor(t, vmi.Name, "Running and Ready", time.Minute, func(ev launcher.Event) bool {
			c := condition(ev.Status, v1.VirtualMachineInstanceReady)
			return ev.Status.Phase == v1.Running && c != nil && c.Status == k8sv1.ConditionTrue
		})
		if n := e.events.count(domainName(vmi), libvirt.DOMAIN_EVENT_STARTED); n != 1 {
			t.Errorf("%s started %d times, want once", vmi.Name, n)
		}
	}
	t.Logf("all Running and Ready after %s", time.Since(start))
}

// TestE2EDeleteWhileStarting runs Sync in one goroutine and Delete in
// another, Delete starting at points from "at once" to "while the domain
// starts" (it waits for the state folder, the definition or the start):
// Delete returns no error, Sync none either or ErrDeleted, and afterwards
// there is no domain and no state folder, also a moment later. When Delete
// starts after a delay only (strict false), the goroutine may not have
// entered Sync yet — the calls have no order —, so a Sync that ran after
// Delete may also have made the VMI, whole: domain and state folder both.
func TestE2EDeleteWhileStarting(t *testing.T) {
	e := newEnv(t)
	triggers := []struct {
		name   string
		strict bool
		wait   func(vmi *v1.VirtualMachineInstance)
	}{
		{"at-once", false, func(*v1.VirtualMachineInstance) {}},
		{"after-1ms", false, func(*v1.VirtualMachineInstance) { time.Sleep(time.Millisecond) }},
		{"after-20ms", false, func(*v1.VirtualMachineInstance) { time.Sleep(20 * time.Millisecond) }},
		{"state-folder", true, func(vmi *v1.VirtualMachineInstance) {
			waitUntil(func() bool { _, err := os.Stat(e.layout.StateFolder(vmi.DeepCopy())); return err == nil })
		}},
		{"defined", true, func(vmi *v1.VirtualMachineInstance) {
			waitUntil(func() bool { return e.events.count(domainName(vmi), libvirt.DOMAIN_EVENT_DEFINED) > 0 })
		}},
		{"started", true, func(vmi *v1.VirtualMachineInstance) {
			waitUntil(func() bool { return e.events.count(domainName(vmi), libvirt.DOMAIN_EVENT_STARTED) > 0 })
		}},
	}
	for _, tr := range triggers {
		t.Run(tr.name, func(t *testing.T) {
			vmi := decodeVMI(t, fmt.Sprintf(vmiYAML, uniqueName("e2e-delstart-"+tr.name), 30, "", testguest.ActionIgnore,
				"    memory:\n      guest: 128Mi\n", `      disks:
      - {name: scratch, disk: {bus: virtio}}
      - {name: ci, disk: {bus: virtio}}`, `  volumes:
  - name: scratch
    emptyDisk: {capacity: 16Mi}
  - name: ci
    cloudInitNoCloud: {userData: "#cloud-config\n"}`))
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			syncErr := make(chan error, 1)
			go func() { syncErr <- e.l.Sync(ctx, vmi.DeepCopy()) }()
			tr.wait(vmi)
			delErr := e.l.Delete(ctx, vmi.DeepCopy())
			serr := <-syncErr
			if delErr != nil {
				t.Errorf("Delete: %v", delErr)
			}
			if serr != nil && !errors.Is(serr, launcher.ErrDeleted) {
				t.Errorf("Sync: %v; want no error or ErrDeleted", serr)
			}
			t.Logf("Sync returned %v", serr)
			state := e.layout.StateFolder(vmi.DeepCopy())
			if _, err := os.Stat(state); !tr.strict && serr == nil && err == nil && !lookupGone(t, e.conn, domainName(vmi)) {
				t.Logf("Sync ran after Delete and made the VMI whole; deleting it again")
				if err := e.l.Delete(ctx, vmi); err != nil {
					t.Errorf("second Delete: %v", err)
				}
			}
			for _, after := range []time.Duration{0, 500 * time.Millisecond} {
				time.Sleep(after)
				if !lookupGone(t, e.conn, domainName(vmi)) {
					t.Errorf("%s after both returned: the domain exists", after)
					_ = e.l.Delete(ctx, vmi)
				}
				if _, err := os.Stat(e.layout.StateFolder(vmi.DeepCopy())); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s after both returned: state folder: %v, want it gone", after, err)
				}
			}
		})
	}
}

// waitUntil polls ok every millisecond for up to a minute.
func waitUntil(ok func() bool) {
	for deadline := time.Now().Add(time.Minute); !ok() && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
}

// TestE2EFullDisk puts the state folders on a 2 MiB tmpfs. A VMI whose
// cloud-init ISO cannot fit is refused with a clear error (no space left
// on device, naming the file), leaving no state folder and no domain; a
// VMI that ran, re-synced with user-data that no longer fits, fails the
// same way and keeps its state folder and definition exactly as before.
// An empty disk whose qcow2 metadata cannot fit fails cleanly too.
func TestE2EFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		hosttest.Missing(t, "mounting a tmpfs needs root")
	}
	if err := os.MkdirAll(testRoot, 0o711); err != nil {
		t.Fatal(err)
	}
	mnt, err := os.MkdirTemp(testRoot, "full-")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m,mode=0711", "tmpfs", mnt).CombinedOutput(); err != nil {
		hosttest.Missing(t, "mount tmpfs: %v: %s", err, out)
	}
	// Cleanups run last-in first-out: the launcher's (Deletes) before this.
	t.Cleanup(func() {
		if out, err := exec.Command("umount", mnt).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", mnt, err, out)
		}
		_ = os.Remove(mnt)
	})
	secrets := t.TempDir()
	big := filepath.Join(secrets, "big")
	small := filepath.Join(secrets, "small")
	for dir, size := range map[string]int{big: 3 << 20, small: 100} {
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		data := "#cloud-config\n# " + strings.Repeat("x", size) + "\n"
		if err := os.WriteFile(filepath.Join(dir, "userdata"), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e := newEnvWith(t, func(c *launcher.Config) {
		c.Layout.StateDir = mnt
		c.Sources.Secrets = map[string]string{"big": big, "small": small}
	})
	ctx := context.Background()
	mk := func(base, secret, extraDisk, extraVolume string) *v1.VirtualMachineInstance {
		return decodeVMI(t, fmt.Sprintf(vmiYAML, uniqueName(base), 30, "  startStrategy: Paused\n", testguest.ActionACPI,
			"    memory:\n      guest: 128Mi\n", "      disks:\n      - {name: ci, disk: {bus: virtio}}"+extraDisk,
			"  volumes:\n  - name: ci\n    cloudInitNoCloud: {secretRef: {name: "+secret+"}}"+extraVolume))
	}
	checkNothingLeft := func(vmi *v1.VirtualMachineInstance, err error, want string) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: Sync succeeded on a full disk", vmi.Name)
			_ = e.l.Delete(ctx, vmi)
			return
		}
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v; want an error saying %q", vmi.Name, err, want)
		}
		t.Logf("%s: %v", vmi.Name, err)
		if strings.Contains(err.Error(), "xxxxxxxx") {
			t.Errorf("%s: the error shows user-data", vmi.Name)
		}
		if _, serr := os.Stat(e.layout.StateFolder(vmi.DeepCopy())); !errors.Is(serr, os.ErrNotExist) {
			entries, _ := os.ReadDir(e.layout.StateFolder(vmi.DeepCopy()))
			t.Errorf("%s: state folder left behind: %v", vmi.Name, entries)
		}
		if !lookupGone(t, e.conn, domainName(vmi)) {
			t.Errorf("%s: a domain was left behind", vmi.Name)
		}
	}

	// A new VMI whose ISO does not fit.
	tooBig := mk("e2e-full-iso", "big", "", "")
	checkNothingLeft(tooBig, e.l.Sync(ctx, tooBig), "no space left on device")

	// A new VMI whose empty disk's qcow2 metadata does not fit (1 PiB:
	// a 16 MiB L1 table).
	hugeDisk := mk("e2e-full-qcow2", "small", "\n      - {name: scratch, disk: {bus: virtio}}",
		"\n  - name: scratch\n    emptyDisk: {capacity: 1Pi}")
	checkNothingLeft(hugeDisk, e.l.Sync(ctx, hugeDisk), "spec.volumes[1] (volume scratch)")

	// A VMI that runs, re-synced with user-data that no longer fits.
	vmi := mk("e2e-full-resync", "small", "", "")
	e.sync(t, vmi)
	state := e.layout.StateFolder(vmi.DeepCopy())
	before := snapshotFolder(t, state)
	defBefore := inactiveXML(t, e.conn, domainName(vmi))
	data, err := os.ReadFile(filepath.Join(big, "userdata"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(small, "userdata"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	err = e.l.Sync(ctx, vmi)
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("re-Sync with user-data that does not fit: %v; want no space left on device", err)
	}
	if after := snapshotFolder(t, state); after != before {
		t.Errorf("state folder changed by the failed Sync:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if inactiveXML(t, e.conn, domainName(vmi)) != defBefore {
		t.Errorf("the failed Sync changed the domain's definition")
	}
	if st, err := e.l.Status(ctx, vmi); err != nil || stateKey(st) != "Running/PausedByUser" {
		t.Errorf("status after the failed re-Sync: %s, %v", stateKey(st), err)
	}
}

// snapshotFolder lists the regular files under dir with their size, mode
// and content hash (sockets and logs that libvirt writes are left out).
func snapshotFolder(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() || strings.HasSuffix(p, ".log") {
			return nil
		}
		st, err := os.Stat(p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %v %x\n", strings.TrimPrefix(p, dir), st.Size(), st.Mode(), sha256.Sum256(data))
		return nil
	})
	if err != nil {
		t.Fatalf("snapshot %s: %v", dir, err)
	}
	return b.String()
}

// TestE2EMissingImageStore: with HostLayout.ImageStore naming a folder
// that does not exist yet, a VMI booting a kernel from an image and a VMI
// with a containerDisk, whose registry (localhost) does not answer, are
// refused as not ready (ErrHostNotReady, to be retried) with an error
// naming the field, and leave no state folder and no domain behind.
func TestE2EMissingImageStore(t *testing.T) {
	store := filepath.Join(testRoot, uniqueName("no-such-store"))
	e := newEnvWith(t, func(c *launcher.Config) { c.Layout.ImageStore = store })
	ctx := context.Background()
	kernel := guestVMI(t, uniqueName("e2e-nostore-kernel"), 30, testguest.ActionACPI)
	disk := decodeVMI(t, `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: `+uniqueName("e2e-nostore-disk")+`, namespace: `+testNamespace+`}
spec:
  domain:
    memory: {guest: 128Mi}
    devices:
      disks:
      - {name: ci, disk: {bus: virtio}}
      - {name: root, disk: {bus: virtio}}
  volumes:
  - name: ci
    cloudInitNoCloud: {userData: "#cloud-config\n"}
  - name: root
    containerDisk: {image: `+testguest.Ref+`}
`)
	for _, c := range []struct {
		vmi  *v1.VirtualMachineInstance
		path string
	}{
		{kernel, "spec.domain.firmware.kernelBoot.container.image"},
		{disk, "spec.volumes[1].containerDisk.image"},
	} {
		err := e.l.Sync(ctx, c.vmi)
		var fe *field.Error
		if !errors.As(err, &fe) || fe.Field != c.path {
			t.Errorf("%s: %v; want a field error on %s", c.vmi.Name, err, c.path)
		} else if !errors.Is(err, launcher.ErrHostNotReady) || !strings.Contains(err.Error(), "registry unavailable") {
			t.Errorf("%s: %v; want ErrHostNotReady saying the registry is unavailable", c.vmi.Name, err)
		}
		t.Logf("%s: %v", c.vmi.Name, err)
		if _, serr := os.Stat(e.layout.StateFolder(c.vmi.DeepCopy())); !errors.Is(serr, os.ErrNotExist) {
			t.Errorf("%s: state folder left behind (%v)", c.vmi.Name, serr)
		}
		if !lookupGone(t, e.conn, domainName(c.vmi)) {
			t.Errorf("%s: a domain was left behind", c.vmi.Name)
			_ = e.l.Delete(ctx, c.vmi)
		}
	}
}
