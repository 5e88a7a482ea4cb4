package launcher_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// frozenFor is how long TestE2EFrozenLibvirtd freezes the daemon: past
// the launcher's keepalive (1 s interval, 2 unanswered), so the launcher
// gives its connection up in the middle of the call.
const frozenFor = 5 * time.Second

// TestE2EFrozenLibvirtd freezes a node's libvirtd (SIGSTOP, then SIGCONT)
// for longer than the launcher's keepalive allows, at instants inside a
// paused start and inside a Delete, as a loaded machine does when the
// daemon cannot answer in time (the density test saw the connection reset
// mid-start, "client socket is closed"). The call caught returns once the
// connection is given up; the launcher reconnects; Sync then converges on
// the one domain the interrupted start may have made, and Delete removes
// it and its state folder within seconds of the thaw, whatever the
// interrupted call had done.
func TestE2EFrozenLibvirtd(t *testing.T) {
	name := fmt.Sprintf("m%df", os.Getpid())
	n := newMigrationNode(t, name, "")
	n.cfg.KeepAliveInterval, n.cfg.KeepAliveCount = time.Second, 2
	n.open(t)
	pid, err := hosttest.NodeLibvirtdPID(name)
	if err != nil {
		t.Fatal(err)
	}
	// freeze stops the daemon after, for frozenFor, in the background; the
	// channel closes once it runs again.
	freeze := func(after time.Duration) <-chan struct{} {
		thawed := make(chan struct{})
		go func() {
			defer close(thawed)
			time.Sleep(after)
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				t.Errorf("SIGSTOP libvirtd %d: %v", pid, err)
				return
			}
			time.Sleep(frozenFor)
			if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
				t.Errorf("SIGCONT libvirtd %d: %v", pid, err)
			}
		}()
		return thawed
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGCONT) })

	for i, after := range []time.Duration{0, 150 * time.Millisecond, 400 * time.Millisecond, time.Second} {
		vmi := decodeVMI(t, fmt.Sprintf(vmiYAML, uniqueName(fmt.Sprintf("frozen%d", i)), 0, "  startStrategy: Paused\n", testguest.ActionIgnore,
			"    memory:\n      guest: 128Mi\n", "      {}", ""))
		vmi.Namespace = migrationNamespace
		t.Cleanup(func() { _ = n.l.Delete(context.Background(), vmi) })
		dom := domainName(vmi)

		// A start caught by the freeze.
		thawed := freeze(after)
		began := time.Now()
		err := syncWithin(n, vmi, 2*time.Minute)
		<-thawed
		t.Logf("freeze %s into the start: Sync returned after %s: %v", after, time.Since(began).Round(time.Millisecond), err)
		if err != nil && !errors.Is(err, launcher.ErrUnavailable) {
			t.Errorf("freeze %s into the start: Sync: %v, want ErrUnavailable", after, err)
		}
		converged := time.Now()
		for err != nil && time.Since(converged) < time.Minute {
			time.Sleep(200 * time.Millisecond)
			err = syncWithin(n, vmi, 30*time.Second)
		}
		if err != nil {
			t.Fatalf("freeze %s into the start: Sync after the thaw: %v", after, err)
		}
		st, err := n.l.Status(ctxFor(t, 30*time.Second), vmi)
		if err != nil || !strings.HasPrefix(stateKey(st), string(v1.Running)+"/") {
			t.Errorf("freeze %s into the start: status %s (%v), want Running and paused", after, stateKey(st), err)
		}
		if on := domains(t, n.uri); strings.Count(on, dom) != 1 {
			t.Errorf("freeze %s into the start: domains %q, want %s once", after, on, dom)
		}

		// A Delete caught by the freeze.
		thawed = freeze(after)
		dctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err = n.l.Delete(dctx, vmi)
		cancel()
		<-thawed
		if err != nil && !errors.Is(err, launcher.ErrUnavailable) {
			t.Errorf("freeze %s into Delete: %v, want ErrUnavailable", after, err)
		}
		thaw := time.Now()
		for err != nil && time.Since(thaw) < time.Minute {
			time.Sleep(200 * time.Millisecond)
			dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			err = n.l.Delete(dctx, vmi)
			cancel()
		}
		if err != nil {
			t.Fatalf("freeze %s into Delete: Delete after the thaw: %v", after, err)
		}
		t.Logf("freeze %s into Delete: gone %s after the thaw", after, time.Since(thaw).Round(time.Millisecond))
		if on := domains(t, n.uri); strings.Contains(on, dom) {
			t.Errorf("freeze %s into Delete: the domain is left: %q", after, on)
		}
		if _, err := os.Stat(n.cfg.Layout.StateFolder(vmi)); !os.IsNotExist(err) {
			t.Errorf("freeze %s into Delete: the state folder is left (%v)", after, err)
		}
	}
}

// syncWithin is Sync of vmi on n with a timeout.
func syncWithin(n *migrationNode, vmi *v1.VirtualMachineInstance, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return n.l.Sync(ctx, vmi)
}
