package launcher_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
)

// restartPair is what the restart tests share: one owner and one state
// folder, so that a second launcher is the first one restarted.
type restartPair struct {
	owner    string
	stateDir string
}

// launcher starts a launcher of the pair (the first, or the first
// restarted).
func (p *restartPair) launcher(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, func(c *launcher.Config) {
		c.Owner = p.owner
		if p.stateDir == "" {
			p.stateDir = c.Layout.StateDir
		}
		c.Layout.StateDir = p.stateDir
	})
}

func newPair(name string) *restartPair { return &restartPair{owner: uniqueName(name)} }

// deleteAtEnd deletes vmi when the test ends, with a launcher of the pair
// of its own (the test's may be closed by then).
func (p *restartPair) deleteAtEnd(t *testing.T, vmi *v1.VirtualMachineInstance) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cfg := launcher.Config{URI: testURI, Emulate: true, Owner: p.owner}
		cfg.Layout.StateDir, cfg.Layout.ImageStore = p.stateDir, convert.DefaultImageStore
		l, err := launcher.New(ctx, cfg)
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer l.Close()
		if err := l.Delete(ctx, vmi); err != nil {
			t.Errorf("cleanup: Delete %s: %v", vmi.Name, err)
		}
	})
}

// sync syncs vmi with e and deletes it when the test ends.
func (p *restartPair) sync(t *testing.T, e *env, vmi *v1.VirtualMachineInstance) {
	t.Helper()
	p.deleteAtEnd(t, vmi)
	if err := e.l.Sync(ctxFor(t, 2*time.Minute), vmi); err != nil {
		t.Fatalf("Sync %s: %v", vmi.Name, err)
	}
}

// domainID returns the libvirt ID of a running domain (-1 when off).
func domainID(t *testing.T, c *libvirt.Connect, name string) int {
	t.Helper()
	dom, err := c.LookupDomainByName(name)
	if err != nil {
		t.Fatalf("look up %s: %v", name, err)
	}
	defer dom.Free()
	id, err := dom.GetID()
	if err != nil {
		return -1
	}
	return int(id)
}

// active tells whether the domain called name runs.
func active(t *testing.T, c *libvirt.Connect, name string) bool {
	t.Helper()
	dom, err := c.LookupDomainByName(name)
	if err != nil {
		return false
	}
	defer dom.Free()
	on, err := dom.IsActive()
	return err == nil && on
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestE2ERestart: a launcher restarted on the same host (a new Launcher
// with the same owner) carries on with its VMIs from what their domains
// recorded, whatever status its caller passes.
func TestE2ERestart(t *testing.T) {
	t.Run("NeverBootsTwice", testNeverBootsTwice)
	t.Run("AdoptsRunning", testAdoptsRunning)
	t.Run("ShutdownDeadlineAcrossRestart", testDeadlineAcrossRestart)
	t.Run("OrphanFoundByList", testOrphanFoundByList)
	t.Run("ShutdownDoesNotBlock", testShutdownDoesNotBlock)
}

// testNeverBootsTwice: a VMI that ran to its end is never started again by
// a restarted launcher, whether its caller passes no status, Scheduled or
// Running.
func testNeverBootsTwice(t *testing.T) {
	t.Parallel()
	p := newPair("e2e-owner-once")
	a := p.launcher(t)
	vmi := guestVMI(t, uniqueName("e2e-once"), 30, "testguest.action=poweroff")
	p.sync(t, a, vmi)
	a.watch.waitPhase(t, vmi.Name, v1.Succeeded, 3*time.Minute)
	if err := a.l.Close(); err != nil {
		t.Fatal(err)
	}

	b := p.launcher(t)
	ev := b.watch.waitPhase(t, vmi.Name, v1.Succeeded, 30*time.Second)
	if ev.Status.Reason != "GuestShutdown" {
		t.Errorf("adopted end reason %q, want GuestShutdown", ev.Status.Reason)
	}
	for _, phase := range []v1.VirtualMachineInstancePhase{"", v1.Scheduled, v1.Running} {
		v := vmi.DeepCopy()
		v.Status.Phase = phase
		if err := b.l.Sync(ctxFor(t, time.Minute), v); err != nil {
			t.Fatalf("Sync with status %q: %v", phase, err)
		}
		if active(t, b.conn, domainName(vmi)) {
			t.Fatalf("Sync with status %q started a VMI that ran to its end", phase)
		}
	}
	if n := b.events.count(domainName(vmi), libvirt.DOMAIN_EVENT_STARTED); n != 0 {
		t.Errorf("the restarted launcher started the domain %d times", n)
	}
	st, err := b.l.Status(ctxFor(t, time.Minute), vmi)
	if err != nil || st.Phase != v1.Succeeded {
		t.Errorf("Status after the Syncs: %s, %v", st.Phase, err)
	}
}

// testAdoptsRunning: a running VMI is adopted as it runs (same domain ID,
// no restart), reported on Watch without a Sync, and stopped by the new
// launcher.
func testAdoptsRunning(t *testing.T) {
	t.Parallel()
	p := newPair("e2e-owner-adopt")
	a := p.launcher(t)
	vmi := guestVMI(t, uniqueName("e2e-adopt"), 30, "testguest.action=acpi")
	p.sync(t, a, vmi)
	a.watch.waitFor(t, vmi.Name, "Running and Ready", 3*time.Minute, func(ev launcher.Event) bool {
		c := condition(ev.Status, v1.VirtualMachineInstanceReady)
		return ev.Status.Phase == v1.Running && c != nil && c.Status == "True"
	})
	id := domainID(t, a.conn, domainName(vmi))
	if err := a.l.Close(); err != nil {
		t.Fatal(err)
	}

	b := p.launcher(t)
	b.watch.waitPhase(t, vmi.Name, v1.Running, 30*time.Second)
	if got := domainID(t, b.conn, domainName(vmi)); got != id {
		t.Fatalf("domain ID %d after the restart, %d before: the VMI was restarted", got, id)
	}
	if err := b.l.Sync(ctxFor(t, time.Minute), vmi); err != nil {
		t.Fatal(err)
	}
	if got := domainID(t, b.conn, domainName(vmi)); got != id {
		t.Fatalf("domain ID %d after a Sync of the adopted VMI, %d before", got, id)
	}
	b.waitLine(t, vmi, "waiting for the ACPI power button", 3*time.Minute)
	if err := b.l.Stop(ctxFor(t, 2*time.Minute), vmi); err != nil {
		t.Fatal(err)
	}
	b.watch.waitPhase(t, vmi.Name, v1.Succeeded, time.Minute)
}

// testDeadlineAcrossRestart: a graceful shutdown whose deadline passed
// while no launcher ran is finished by the next one: the guest ignored the
// power button, the domain is destroyed, the VMI Failed.
func testDeadlineAcrossRestart(t *testing.T) {
	t.Parallel()
	p := newPair("e2e-owner-deadline")
	a := p.launcher(t)
	vmi := guestVMI(t, uniqueName("e2e-deadline"), 3, "testguest.action=ignore")
	p.sync(t, a, vmi)
	a.watch.waitPhase(t, vmi.Name, v1.Running, 3*time.Minute)
	a.waitLine(t, vmi, "testguest: ignoring", 3*time.Minute)
	if err := a.l.Shutdown(ctxFor(t, time.Minute), vmi); err != nil {
		t.Fatal(err)
	}
	if err := a.l.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second) // the 3s deadline passes while no launcher runs
	if !active(t, a.conn, domainName(vmi)) {
		t.Fatal("the guest powered off by itself; it should ignore the power button")
	}

	b := p.launcher(t)
	ev := b.watch.waitPhase(t, vmi.Name, v1.Failed, time.Minute)
	if ev.Status.Reason != "Destroyed" {
		t.Errorf("end reason %q, want Destroyed", ev.Status.Reason)
	}
	if active(t, b.conn, domainName(vmi)) {
		t.Error("the domain still runs after its deadline")
	}
}

// testOrphanFoundByList: the domain of a VMI its controller forgot while
// the launcher was down is found by List, with the VMI's identity, and
// removed with Delete of what List returned.
func testOrphanFoundByList(t *testing.T) {
	t.Parallel()
	p := newPair("e2e-owner-orphan")
	a := p.launcher(t)
	vmi := guestVMI(t, uniqueName("e2e-orphan"), 30, "testguest.action=acpi")
	vmi.UID = "0d8a7c1e-orphan"
	p.sync(t, a, vmi)
	if err := a.l.Close(); err != nil {
		t.Fatal(err)
	}

	b := p.launcher(t)
	list, err := b.l.List(ctxFor(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	var found *v1.VirtualMachineInstance
	for _, v := range list {
		if v.Namespace == vmi.Namespace && v.Name == vmi.Name {
			found = v
		}
	}
	if len(list) != 1 || found == nil || found.UID != vmi.UID || found.Status.Phase == "" {
		t.Fatalf("List = %d VMIs, want exactly %s/%s with uid %s and a phase: %+v", len(list), vmi.Namespace, vmi.Name, vmi.UID, found)
	}
	if err := b.l.Delete(ctxFor(t, time.Minute), found); err != nil {
		t.Fatal(err)
	}
	if _, err := b.conn.LookupDomainByName(domainName(vmi)); err == nil {
		t.Error("the orphan's domain is still defined")
	}
	if _, err := os.Stat(b.layout.StateFolder(vmi)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the orphan's state folder is still there: %v", err)
	}
	if list, err := b.l.List(ctxFor(t, time.Minute)); err != nil || len(list) != 0 {
		t.Errorf("List after Delete: %d, %v", len(list), err)
	}
}

// testShutdownDoesNotBlock: a shutdown request returns at once, and Sync
// and Delete of the same VMI are not held up by the grace period running.
func testShutdownDoesNotBlock(t *testing.T) {
	t.Parallel()
	p := newPair("e2e-owner-nonblock")
	e := p.launcher(t)
	vmi := guestVMI(t, uniqueName("e2e-nonblock"), 120, "testguest.action=ignore")
	p.sync(t, e, vmi)
	e.watch.waitPhase(t, vmi.Name, v1.Running, 3*time.Minute)
	id := domainID(t, e.conn, domainName(vmi))

	began := time.Now()
	if err := e.l.Shutdown(ctxFor(t, time.Minute), vmi); err != nil {
		t.Fatal(err)
	}
	t.Logf("Shutdown returned after %s", time.Since(began))
	began = time.Now()
	if err := e.l.Sync(ctxFor(t, 10*time.Second), vmi); err != nil {
		t.Fatalf("Sync during the grace period: %v", err)
	}
	t.Logf("Sync during the grace period returned after %s", time.Since(began))
	if got := domainID(t, e.conn, domainName(vmi)); got != id {
		t.Errorf("Sync during the grace period restarted the domain (%d → %d)", id, got)
	}
	began = time.Now()
	if err := e.l.Delete(ctxFor(t, 30*time.Second), vmi); err != nil {
		t.Fatalf("Delete during the grace period: %v", err)
	}
	t.Logf("Delete during the grace period returned after %s", time.Since(began))
	if _, err := e.conn.LookupDomainByName(domainName(vmi)); err == nil {
		t.Error("the domain is still defined after Delete")
	}
}

// TestE2ETwoOwners: two launchers with different owners on one libvirtd
// each list, watch and change only their own VMIs; the other's are a
// conflict, and left alone.
func TestE2ETwoOwners(t *testing.T) {
	a := newPair("e2e-node-a").launcher(t)
	b := newPair("e2e-node-b").launcher(t)
	va := guestVMI(t, uniqueName("e2e-of-a"), 30, "testguest.action=acpi")
	vb := guestVMI(t, uniqueName("e2e-of-b"), 30, "testguest.action=acpi")
	a.sync(t, va)
	b.sync(t, vb)
	for _, c := range []struct {
		e    *env
		mine *v1.VirtualMachineInstance
	}{{a, va}, {b, vb}} {
		list, err := c.e.l.List(ctxFor(t, time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 1 || list[0].Name != c.mine.Name {
			var names []string
			for _, v := range list {
				names = append(names, v.Name)
			}
			t.Errorf("List = %v, want only %s", names, c.mine.Name)
		}
	}
	id := domainID(t, b.conn, domainName(va))
	for what, call := range map[string]func() error{
		"Sync":   func() error { return b.l.Sync(ctxFor(t, time.Minute), va) },
		"Delete": func() error { return b.l.Delete(ctxFor(t, time.Minute), va) },
		"Stop":   func() error { return b.l.Stop(ctxFor(t, time.Minute), va) },
		"Pause":  func() error { return b.l.Pause(ctxFor(t, time.Minute), va) },
	} {
		err := call()
		var ce *launcher.ConflictError
		if !errors.Is(err, launcher.ErrConflict) || !errors.As(err, &ce) || ce.Owner != a.l.Owner() {
			t.Errorf("b.%s of a's VMI: %v, want a conflict naming owner %s", what, err, a.l.Owner())
		}
	}
	if got := domainID(t, a.conn, domainName(va)); got != id || got < 0 {
		t.Errorf("a's domain changed under b's calls (id %d → %d)", id, got)
	}
	if _, err := os.Stat(a.layout.StateFolder(va)); err != nil {
		t.Errorf("a's state folder: %v", err)
	}
	time.Sleep(time.Second)
	if evs := b.watch.of(va.Name); len(evs) != 0 {
		t.Errorf("b's Watch reported a's VMI %d times", len(evs))
	}
}

// TestE2EAdoptAfterSIGKILL: a launcher process killed with SIGKILL leaves
// its guest running; a launcher in another process adopts it without a
// reboot and reports it without a Sync.
func TestE2EAdoptAfterSIGKILL(t *testing.T) {
	if os.Getenv("VMI2LIBVIRT_CHILD") != "" {
		t.Skip("in the child process")
	}
	p := newPair("e2e-owner-sigkill")
	e := p.launcher(t) // the adopter, started first for its Watch
	if err := e.l.Close(); err != nil {
		t.Fatal(err)
	}
	name := uniqueName("e2e-sigkill")
	cmd := exec.Command(os.Args[0], "-test.run=^TestE2EChildLauncher$", "-test.v")
	cmd.Env = append(os.Environ(), "VMI2LIBVIRT_CHILD=sync", "CHILD_OWNER="+p.owner, "CHILD_STATE="+p.stateDir, "CHILD_VMI="+name)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	synced := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "child: ") {
				synced <- sc.Text()
			}
		}
		close(synced)
	}()
	select {
	case line := <-synced:
		if line != "child: synced" {
			t.Fatalf("child: %s", line)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("the child launcher did not sync")
	}
	vmi := guestVMI(t, name, 30, "testguest.action=acpi")
	id := domainID(t, e.conn, domainName(vmi))
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	p.deleteAtEnd(t, vmi)
	b := p.launcher(t)
	b.watch.waitPhase(t, name, v1.Running, time.Minute)
	if got := domainID(t, b.conn, domainName(vmi)); got != id {
		t.Fatalf("domain ID %d after the new process adopted it, %d before", got, id)
	}
	b.waitLine(t, vmi, "waiting for the ACPI power button", 3*time.Minute)
	if err := b.l.Stop(ctxFor(t, 2*time.Minute), vmi); err != nil {
		t.Fatal(err)
	}
	b.watch.waitPhase(t, name, v1.Succeeded, time.Minute)
}

// TestE2EChildLauncher is the child process of TestE2EAdoptAfterSIGKILL:
// it syncs a VMI, says so, and waits to be killed.
func TestE2EChildLauncher(t *testing.T) {
	if os.Getenv("VMI2LIBVIRT_CHILD") != "sync" {
		t.Skip("runs only as TestE2EAdoptAfterSIGKILL's child")
	}
	cfg := launcher.Config{URI: testURI, Emulate: true, Owner: os.Getenv("CHILD_OWNER")}
	cfg.Layout.StateDir = os.Getenv("CHILD_STATE")
	cfg.Layout.ImageStore = convert.DefaultImageStore
	l, err := launcher.New(ctxFor(t, time.Minute), cfg)
	if err != nil {
		fmt.Println("child: New:", err)
		return
	}
	vmi := guestVMI(t, os.Getenv("CHILD_VMI"), 30, "testguest.action=acpi")
	if err := l.Sync(ctxFor(t, 2*time.Minute), vmi); err != nil {
		fmt.Println("child: Sync:", err)
		return
	}
	fmt.Println("child: synced")
	time.Sleep(10 * time.Minute)
}

// TestE2ENeverBootsTwiceAcrossLibvirtdRestart: a VMI whose guest powered
// off while no launcher ran, and whose shut-off reason libvirtd then
// forgot in a restart, is still known to have run: the next launcher
// reports how it ended (from libvirt's log) and never starts it again.
func TestE2ENeverBootsTwiceAcrossLibvirtdRestart(t *testing.T) {
	if os.Getenv("CI") == "" && os.Getenv(faultsEnv) == "" {
		t.Skipf("restarts the host's libvirtd; set %s=1 to run it (CI runs it)", faultsEnv)
	}
	hosttest.LockLibvirt(t, true)
	exclusive = true
	defer func() { exclusive = false }()
	p := newPair("e2e-owner-forgotten")
	a := p.launcher(t)
	vmi := guestVMI(t, uniqueName("e2e-forgotten"), 30, "testguest.action=poweroff")
	p.sync(t, a, vmi)
	if err := a.l.Close(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(3 * time.Minute); active(t, a.conn, domainName(vmi)); time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the guest did not power off")
		}
	}
	restartLibvirtd(t, func() {})
	c, err := libvirt.NewConnect(testURI)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if dom, err := c.LookupDomainByName(domainName(vmi)); err == nil {
		state, reason, _ := dom.GetState()
		t.Logf("after libvirtd's restart the domain is in state %d, reason %d", state, reason)
		if reason != int(libvirt.DOMAIN_SHUTOFF_UNKNOWN) {
			t.Logf("libvirtd remembered the reason: the test does not exercise a forgotten one")
		}
		dom.Free()
	}

	b := p.launcher(t)
	ev := b.watch.waitPhase(t, vmi.Name, v1.Succeeded, 30*time.Second)
	if ev.Status.Reason != "GuestShutdown" {
		t.Errorf("end reason %q, want GuestShutdown (from libvirt's log)", ev.Status.Reason)
	}
	v := vmi.DeepCopy()
	v.Status = v1.VirtualMachineInstanceStatus{}
	if err := b.l.Sync(ctxFor(t, time.Minute), v); err != nil {
		t.Fatal(err)
	}
	if active(t, c, domainName(vmi)) {
		t.Fatal("a VMI that ran to its end was started again after libvirtd forgot how it ended")
	}
}

// TestE2EEventsNameTheDomainsVMI: a Sync of a later VMI of the same name
// (another UID), refused while the earlier one runs, does not relabel the
// earlier one: Watch reports the running domain's changes, and its end
// when the caller deletes it to make room, with the UID of the VMI it
// runs, so a caller matching events to objects by UID does not take them
// for the later VMI's. The later VMI's own domain then reports its own.
func TestE2EEventsNameTheDomainsVMI(t *testing.T) {
	e := newEnv(t)
	earlier := guestVMI(t, uniqueName("e2e-earlier"), 0, "testguest.action=ignore")
	earlier.UID = "uid-earlier"
	e.sync(t, earlier)
	e.watch.waitPhase(t, earlier.Name, v1.Running, 3*time.Minute)

	later := earlier.DeepCopy()
	later.UID = "uid-later"
	err := e.l.Sync(ctxFor(t, time.Minute), later)
	var ce *launcher.ConflictError
	if !errors.As(err, &ce) || ce.Owner != e.l.Owner() {
		t.Fatalf("Sync of a later VMI of the same name: %v, want a conflict with the earlier one", err)
	}
	dom, err := e.conn.LookupDomainByName(domainName(earlier))
	if err != nil {
		t.Fatal(err)
	}
	defer dom.Free()
	if err := dom.Suspend(); err != nil {
		t.Fatal(err)
	}
	ev := e.watch.waitFor(t, earlier.Name, "paused", time.Minute, func(ev launcher.Event) bool {
		return stateKey(ev.Status) == "Running/PausedByUser"
	})
	if ev.UID != earlier.UID {
		t.Errorf("Watch reported the earlier VMI's pause with uid %q, want %q", ev.UID, earlier.UID)
	}

	if err := e.l.Delete(ctxFor(t, time.Minute), later); err != nil {
		t.Fatal(err)
	}
	e.watch.waitFor(t, earlier.Name, "deleted", time.Minute, func(ev launcher.Event) bool { return ev.Deleted })
	for _, r := range e.watch.of(earlier.Name) {
		if r.ev.UID != earlier.UID {
			t.Errorf("Watch event %s (deleted %v) of the earlier VMI with uid %q, want %q", stateKey(r.ev.Status), r.ev.Deleted, r.ev.UID, earlier.UID)
		}
	}
	seen := len(e.watch.of(earlier.Name))
	e.sync(t, later)
	ran := false
	for deadline := time.Now().Add(3 * time.Minute); !ran && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for _, r := range e.watch.of(later.Name)[seen:] {
			ran = ran || r.ev.Status.Phase == v1.Running
		}
	}
	if !ran {
		t.Fatal("the later VMI did not run")
	}
	for _, r := range e.watch.of(later.Name)[seen:] {
		if r.ev.UID != later.UID {
			t.Errorf("Watch event %s of the later VMI with uid %q, want %q", stateKey(r.ev.Status), r.ev.UID, later.UID)
		}
	}
}
