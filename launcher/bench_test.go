package launcher_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// BenchmarkSyncToRunning measures, for a new test guest VMI under
// emulation, the time from calling Sync until Watch reports it Running
// (the QEMU process exists), and until Watch reports it Ready (libvirt has
// started its vCPUs). Delete is not timed.
//
//	go test ./launcher -run '^$' -bench SyncToRunning -benchtime 5x
func BenchmarkSyncToRunning(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	events := e.l.Watch(watchCtx)
	var toRunning, toReady, syncCall time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		vmi := guestVMI(b, uniqueName(fmt.Sprintf("bench-sync-%d", i)), 0, testguest.ActionIgnore)
		b.StartTimer()
		start := time.Now()
		if err := e.l.Sync(ctx, vmi); err != nil {
			b.Fatalf("Sync: %v", err)
		}
		syncCall += time.Since(start)
		running := false
		for {
			ev := <-events
			if ev.Name != vmi.Name {
				continue
			}
			if ev.Status.Phase == v1.Running && !running {
				running = true
				toRunning += time.Since(start)
			}
			if c := condition(ev.Status, v1.VirtualMachineInstanceReady); c != nil && c.Status == "True" {
				toReady += time.Since(start)
				break
			}
		}
		b.StopTimer()
		if err := e.l.Delete(ctx, vmi); err != nil {
			b.Fatalf("Delete: %v", err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(toRunning.Milliseconds())/n, "ms-to-Running/op")
	b.ReportMetric(float64(toReady.Milliseconds())/n, "ms-to-Ready/op")
	b.ReportMetric(float64(syncCall.Milliseconds())/n, "ms-Sync-call/op")
}

// BenchmarkEventToWatch measures how long a change made behind the
// launcher's back (another libvirt client pauses or resumes the domain)
// takes to reach Watch: from libvirt's lifecycle event, as an independent
// client receives it, and from the launcher's own event callback.
//
//	go test ./launcher -run '^$' -bench EventToWatch -benchtime 50x
func BenchmarkEventToWatch(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	vmi := guestVMI(b, uniqueName("bench-event"), 0, testguest.ActionIgnore)
	e.sync(b, vmi)
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	events := e.l.Watch(watchCtx)
	dom, err := e.conn.LookupDomainByName(domainName(vmi))
	if err != nil {
		b.Fatal(err)
	}
	defer dom.Free()
	// Wait until the guest runs (Ready) before pausing it.
	for {
		ev := <-events
		if c := condition(ev.Status, v1.VirtualMachineInstanceReady); ev.Name == vmi.Name && c != nil && c.Status == "True" {
			break
		}
	}
	var fromEvent, fromCallback time.Duration
	b.ResetTimer()
	for i := range b.N {
		pause := i%2 == 0
		want, typ := "Running", libvirt.DOMAIN_EVENT_RESUMED
		act := dom.Resume
		if pause {
			want, typ, act = "Running/PausedByUser", libvirt.DOMAIN_EVENT_SUSPENDED, dom.Suspend
		}
		before := e.events.count(domainName(vmi), typ)
		if err := act(); err != nil {
			b.Fatal(err)
		}
		var got launcher.Event
		for {
			got = <-events
			if got.Name == vmi.Name && stateKey(got.Status) == want {
				break
			}
		}
		at := time.Now()
		// The independent client's copy of the event.
		var evAt time.Time
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
			if evs := e.events.of(domainName(vmi)); e.events.count(domainName(vmi), typ) > before {
				for j := len(evs) - 1; j >= 0; j-- {
					if evs[j].typ == typ {
						evAt = evs[j].at
						break
					}
				}
				break
			}
		}
		if evAt.IsZero() {
			b.Fatalf("no %v event seen by the independent client", typ)
		}
		fromEvent += at.Sub(evAt)
		if !got.LibvirtEvent.IsZero() {
			fromCallback += at.Sub(got.LibvirtEvent)
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(fromEvent.Microseconds())/n/1000, "ms-event-to-Watch/op")
	b.ReportMetric(float64(fromCallback.Microseconds())/n/1000, "ms-callback-to-Watch/op")
	b.ReportMetric(float64(e.l.DroppedEvents()), "dropped-events")
}

// BenchmarkSyncRunning measures the steady-state reconcile: Sync of a VMI
// whose domain already runs as its spec says, called again and again with
// the same VMI (the first call plans and finds nothing to change; the
// others cost nothing: see steady.go).
//
//	go test ./launcher -run '^$' -bench SyncRunning -benchmem
func BenchmarkSyncRunning(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	vmi := guestVMI(b, uniqueName("bench-steady"), 0, testguest.ActionIgnore)
	e.sync(b, vmi)
	e.watch.waitPhase(b, vmi.Name, v1.Running, 3*time.Minute)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := e.l.Sync(ctx, vmi); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSyncReplan measures a Sync that plans again a VMI whose domain
// runs as planned: each call gets a VMI changed where the domain does not
// change (an annotation), so it gathers (host facts, images, config
// sources), plans, reads the domain and finds it as planned, and writes
// nothing.
//
//	go test ./launcher -run '^$' -bench SyncReplan -benchmem
func BenchmarkSyncReplan(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	vmi := guestVMI(b, uniqueName("bench-replan"), 0, testguest.ActionIgnore)
	e.sync(b, vmi)
	e.watch.waitPhase(b, vmi.Name, v1.Running, 3*time.Minute)
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		i++
		vmi.Annotations = map[string]string{"bench": strconv.Itoa(i)}
		if err := e.l.Sync(ctx, vmi); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkList50 measures List with 50 owned domains, defined (from each
// VMI's Plan) but not started, so the machine's cores are not the limit.
//
//	go test ./launcher -run '^$' -bench List50 -benchmem
func BenchmarkList50(b *testing.B) {
	owner := uniqueName("bench-list-owner")
	e := newEnvWith(b, func(c *launcher.Config) { c.Owner = owner })
	ctx := context.Background()
	for i := range 50 {
		vmi := guestVMI(b, uniqueName(fmt.Sprintf("bench-list-%02d", i)), 0, testguest.ActionIgnore)
		plan, err := e.l.Plan(ctx, vmi)
		if err != nil {
			b.Fatal(err)
		}
		dom, err := e.conn.DomainDefineXML(string(plan.XML))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = dom.Undefine(); _ = dom.Free() })
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		list, err := e.l.List(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(list) != 50 {
			b.Fatalf("List: %d VMIs, want 50", len(list))
		}
	}
}
