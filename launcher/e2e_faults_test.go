package launcher_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/internal/testguest"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
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
		t.Skipf("restarts the host's libvirtd; set %s=1 (or CI) to run it", faultsEnv)
	}
	lockE2E(t, true)
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
