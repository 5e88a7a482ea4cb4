package launcher_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// frozenFor is how long TestE2EFrozenLibvirtd freezes the daemon: past
// the keepalive its second part sets (1 s interval, 2 unanswered), so that
// launcher gives its connection up in the middle of the call.
const frozenFor = 5 * time.Second

// TestE2EFrozenLibvirtd freezes a node's libvirtd (SIGSTOP, then SIGCONT)
// for frozenFor at instants inside paused starts and inside Deletes, as a
// loaded machine does when the daemon cannot answer in time.
//
// With the default configuration (no client keepalive) three VMIs are
// synced, then deleted, at once: the calls wait for the thaw and succeed.
// (With a keepalive, libvirt 9.0's client crashed this test's process when
// the keepalive closed the connection under those concurrent calls.)
//
// With a keepalive, one call at a time: the call caught returns
// ErrUnavailable once the connection is given up, the launcher reconnects,
// Sync converges on the one domain the interrupted start may have made,
// and Delete removes it and its state folder, whatever the interrupted call
// had done. A start whose call is lost and which libvirtd then fails (its
// QEMU hook, the first time) is started again by the next Sync; in CI, such
// a VMI was once judged Failed ("StartInterrupted") instead.
func TestE2EFrozenLibvirtd(t *testing.T) {
	name := fmt.Sprintf("m%df", os.Getpid())
	n := newMigrationNode(t, name, "")
	// freeze stops the daemon after, for frozenFor, in the background; the
	// channel closes once it runs again.
	freeze := func(after time.Duration) <-chan struct{} {
		thawed := make(chan struct{})
		go func() {
			defer close(thawed)
			time.Sleep(after)
			thaw, err := hosttest.FreezeNodeLibvirtd(t, name)
			if err != nil {
				t.Error(err)
				return
			}
			time.Sleep(frozenFor)
			if err := thaw(); err != nil {
				t.Error(err)
			}
		}()
		return thawed
	}
	vmiOf := func(base string) *v1.VirtualMachineInstance {
		vmi := decodeVMI(t, fmt.Sprintf(vmiYAML, uniqueName(base), 0, "  startStrategy: Paused\n", testguest.ActionIgnore,
			"    memory:\n      guest: 128Mi\n", "      {}", ""))
		vmi.Namespace = migrationNamespace
		t.Cleanup(func() { _ = n.l.Delete(context.Background(), vmi) })
		return vmi
	}
	// runningOnce checks that vmi runs paused as the one domain of its name.
	runningOnce := func(t *testing.T, what string, vmi *v1.VirtualMachineInstance) {
		t.Helper()
		st, err := n.l.Status(ctxFor(t, 30*time.Second), vmi)
		if err != nil || !strings.HasPrefix(stateKey(st), string(v1.Running)+"/") {
			qemuLog, _ := os.ReadFile(hosttest.NodeLog(name, "qemu/"+domainName(vmi)+".log"))
			daemonLog, _ := exec.Command("tail", "-n", "30", hosttest.NodeLog(name, "libvirtd.log")).Output()
			t.Errorf("%s: status %s reason %q (%v), want Running and paused\nQEMU's log:\n%s\nlibvirtd's log:\n%s",
				what, stateKey(st), st.Reason, err, qemuLog, daemonLog)
		}
		if on := domains(t, n.uri); strings.Count(on, domainName(vmi)) != 1 {
			t.Errorf("%s: domains %q, want %s once", what, on, domainName(vmi))
		}
	}
	// gone checks that nothing of vmi is left.
	gone := func(t *testing.T, what string, vmi *v1.VirtualMachineInstance) {
		t.Helper()
		if on := domains(t, n.uri); strings.Contains(on, domainName(vmi)) {
			t.Errorf("%s: the domain is left: %q", what, on)
		}
		if _, err := os.Stat(n.cfg.Layout.StateFolder(vmi)); !os.IsNotExist(err) {
			t.Errorf("%s: the state folder is left (%v)", what, err)
		}
	}

	t.Run("default", func(t *testing.T) {
		vmis := []*v1.VirtualMachineInstance{vmiOf("frozen-a"), vmiOf("frozen-b"), vmiOf("frozen-c")}
		for _, op := range []struct {
			what string
			call func(context.Context, *v1.VirtualMachineInstance) error
		}{{"Sync", n.l.Sync}, {"Delete", n.l.Delete}} {
			thawed := freeze(200 * time.Millisecond)
			errs := make([]error, len(vmis))
			var wg sync.WaitGroup
			for i, vmi := range vmis {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					defer cancel()
					errs[i] = op.call(ctx, vmi)
				})
			}
			wg.Wait()
			<-thawed
			for i, vmi := range vmis {
				if errs[i] != nil {
					t.Errorf("%s %s across the freeze: %v, want it to wait and succeed", op.what, vmi.Name, errs[i])
				}
				if op.what == "Sync" {
					runningOnce(t, "Sync across the freeze", vmi)
				} else {
					gone(t, "Delete across the freeze", vmi)
				}
			}
		}
	})

	t.Run("keepalive", func(t *testing.T) {
		// The first start of the domain of lostVMI takes 3 s in libvirtd
		// and then fails, in libvirt's QEMU hook.
		lostVMI := vmiOf("frozen-lost")
		hookMark := filepath.Join(t.TempDir(), "failed-once")
		if err := hosttest.SetNodeQEMUHook(name, fmt.Sprintf(`#!/bin/sh
if [ "$1 $2 $3" = "%s prepare begin" ] && [ ! -e %s ]; then touch %s; sleep 3; exit 1; fi
exit 0
`, domainName(lostVMI), hookMark, hookMark)); err != nil {
			t.Fatal(err)
		}
		n.cfg.KeepAliveInterval, n.cfg.KeepAliveCount = time.Second, 2
		n.open(t)
		for i, after := range []time.Duration{0, 150 * time.Millisecond, 400 * time.Millisecond, time.Second} {
			vmi := vmiOf(fmt.Sprintf("frozen%d", i))

			// A start caught by the freeze.
			thawed := freeze(after)
			began := time.Now()
			err := syncWithin(n, vmi, 2*time.Minute)
			<-thawed
			t.Logf("freeze %s into the start: Sync returned after %s: %v", after, time.Since(began).Round(time.Millisecond), err)
			if err != nil && !errors.Is(err, launcher.ErrUnavailable) {
				t.Errorf("freeze %s into the start: Sync: %v, want ErrUnavailable", after, err)
			}
			for thaw := time.Now(); err != nil && time.Since(thaw) < time.Minute; {
				time.Sleep(200 * time.Millisecond)
				err = syncWithin(n, vmi, 30*time.Second)
			}
			if err != nil {
				t.Fatalf("freeze %s into the start: Sync after the thaw: %v", after, err)
			}
			runningOnce(t, fmt.Sprintf("freeze %s into the start", after), vmi)

			// A Delete caught by the freeze.
			thawed = freeze(after)
			err = deleteWithin(n, vmi, 2*time.Minute)
			<-thawed
			if err != nil && !errors.Is(err, launcher.ErrUnavailable) {
				t.Errorf("freeze %s into Delete: %v, want ErrUnavailable", after, err)
			}
			thaw := time.Now()
			for err != nil && time.Since(thaw) < time.Minute {
				time.Sleep(200 * time.Millisecond)
				err = deleteWithin(n, vmi, 30*time.Second)
			}
			if err != nil {
				t.Fatalf("freeze %s into Delete: Delete after the thaw: %v", after, err)
			}
			t.Logf("freeze %s into Delete: gone %s after the thaw", after, time.Since(thaw).Round(time.Millisecond))
			gone(t, fmt.Sprintf("freeze %s into Delete", after), vmi)
		}

		// A start whose call is lost, and which libvirtd then fails: the
		// launcher could not clear the pending start it had recorded. The
		// next Sync finds that the start failed, and starts the domain.
		thawed := freeze(time.Second)
		err := syncWithin(n, lostVMI, 2*time.Minute)
		<-thawed
		if !errors.Is(err, launcher.ErrUnavailable) {
			t.Fatalf("a start lost, then failed by libvirtd: Sync: %v, want ErrUnavailable", err)
		}
		for thaw := time.Now(); err != nil && time.Since(thaw) < time.Minute; {
			time.Sleep(200 * time.Millisecond)
			err = syncWithin(n, lostVMI, 30*time.Second)
		}
		if err != nil {
			t.Fatalf("a start lost, then failed by libvirtd: Sync after the thaw: %v", err)
		}
		if _, err := os.Stat(hookMark); err != nil {
			t.Fatalf("the QEMU hook did not fail the first start: %v", err)
		}
		runningOnce(t, "a start lost, then failed by libvirtd", lostVMI)
	})
}

// syncWithin is Sync of vmi on n with a timeout.
func syncWithin(n *migrationNode, vmi *v1.VirtualMachineInstance, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return n.l.Sync(ctx, vmi)
}

// deleteWithin is Delete of vmi on n with a timeout.
func deleteWithin(n *migrationNode, vmi *v1.VirtualMachineInstance, d time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return n.l.Delete(ctx, vmi)
}
