package launcher_test

// Shared helpers of the end-to-end tests: they run the launcher against
// the real libvirtd (qemu:///system) with the test guest of
// internal/testguest, always under emulation (nested KVM hangs guests on
// the test machines). Without libvirtd or the guest's pieces they skip,
// unless CI is set: then they fail.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

const (
	testURI = "qemu:///system"
	// testNamespace holds every test VMI, so leftovers are easy to spot.
	testNamespace = "vmi2libvirt-e2e"
	// testRoot holds the test run's state folders; QEMU must be able to
	// walk into it, so it is not under a 0700 temporary folder.
	testRoot = "/var/lib/vmi2libvirt/e2e"
)

// env is one test's launcher, with an independent libvirt connection that
// records the lifecycle events libvirt sends, and a Watch recorder.
type env struct {
	t      *testing.T
	l      *launcher.Launcher
	layout convert.HostLayout
	conn   *libvirt.Connect
	events *lifecycleLog
	watch  *watchLog
}

var (
	// envCount numbers the launchers the tests make.
	envCount  atomic.Int64
	guestOnce sync.Once
	guestErr  error
	// exclusive is set while a test holds the e2e lock exclusively.
	exclusive bool
)

// newEnv connects a launcher (emulation on) with a fresh state folder, and
// builds the test guest into the default image store.
func newEnv(t testing.TB) *env {
	t.Helper()
	return newEnvWith(t, nil)
}

// newEnvWith is newEnv with the launcher's Config changed by edit (when
// not nil) before launcher.New: another state folder or image store, a
// logger...
func newEnvWith(t testing.TB, edit func(*launcher.Config)) *env {
	t.Helper()
	if c, err := libvirt.NewConnect(testURI); err != nil {
		hosttest.Missing(t, "libvirtd unreachable at %s: %v", testURI, err)
	} else {
		_, _ = c.Close()
	}
	if !exclusive {
		hosttest.LockLibvirt(t, false)
	}
	guestOnce.Do(func() { _, guestErr = testguest.Install(convert.DefaultImageStore, testguest.Options{}) })
	if guestErr != nil {
		hosttest.Missing(t, "test guest cannot be built: %v", guestErr)
	}
	stateDir := hosttest.Dir(t, testRoot, "vmis-")
	// Each launcher of the tests is an owner of its own, as launchers on
	// different nodes would be: it adopts no other test's domains.
	cfg := launcher.Config{URI: testURI, Emulate: true, Owner: fmt.Sprintf("e2e-%d-%d", os.Getpid(), envCount.Add(1)),
		Layout: convert.HostLayout{StateDir: stateDir, ImageStore: convert.DefaultImageStore}}
	if edit != nil {
		edit(&cfg)
	}
	layout := cfg.Layout
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := launcher.New(ctx, cfg)
	if err != nil {
		t.Fatalf("launcher.New: %v", err)
	}
	e := &env{l: l, layout: layout, events: &lifecycleLog{byDomain: map[string][]lifecycleEvent{}}}
	if tt, ok := t.(*testing.T); ok {
		e.t = tt
	}
	// The launcher registered libvirt's event loop; a second connection
	// listens to the same events as the test's witness.
	e.conn, err = libvirt.NewConnect(testURI)
	if err != nil {
		t.Fatalf("second connection: %v", err)
	}
	id, err := e.conn.DomainEventLifecycleRegister(nil, func(_ *libvirt.Connect, d *libvirt.Domain, ev *libvirt.DomainEventLifecycle) {
		name, _ := d.GetName()
		e.events.add(name, ev.Event, time.Now())
	})
	if err != nil {
		t.Fatalf("register lifecycle events: %v", err)
	}
	watchCtx, stopWatch := context.WithCancel(context.Background())
	e.watch = newWatchLog(l.Watch(watchCtx))
	t.Cleanup(func() {
		stopWatch()
		_ = e.conn.DomainEventDeregister(id)
		_, _ = e.conn.Close()
		_ = l.Close()
	})
	return e
}

// vmiYAML is a VMI booting the test guest. Fill it with fmt.Sprintf: name,
// grace period, extra spec.domain lines (indented 4), action, devices
// (indented 6), volumes and networks (spec level, indented 2).
const vmiYAML = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: %s
  namespace: ` + testNamespace + `
spec:
  terminationGracePeriodSeconds: %d
%s  domain:
    firmware:
      kernelBoot:
        kernelArgs: ` + testguest.KernelArgs + ` %s
        container:
          image: ` + testguest.Ref + `
          kernelPath: ` + testguest.KernelPath + `
          initrdPath: ` + testguest.InitrdPath + `
%s    devices:
%s
%s`

// guestVMI is a small test guest VMI: 1 vCPU, 128Mi, no disks, the pod
// network (with a NIC), and the given action.
func guestVMI(t testing.TB, name string, grace int, action string) *v1.VirtualMachineInstance {
	return decodeVMI(t, fmt.Sprintf(vmiYAML, name, grace, "", action,
		"    memory:\n      guest: 128Mi\n", "      {}", ""))
}

func decodeVMI(t testing.TB, yaml string) *v1.VirtualMachineInstance {
	t.Helper()
	vmi, err := api.Decode([]byte(yaml))
	if err != nil {
		t.Fatalf("decode VMI: %v\n%s", err, yaml)
	}
	return vmi
}

// uniqueName returns a VMI name unique to this test process.
func uniqueName(base string) string {
	return fmt.Sprintf("%s-%d", base, os.Getpid())
}

// sync runs Sync and registers a cleanup that deletes the VMI.
func (e *env) sync(t testing.TB, vmi *v1.VirtualMachineInstance) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.l.Delete(ctx, vmi); err != nil {
			t.Errorf("cleanup: Delete %s: %v", vmi.Name, err)
		}
	})
	if err := e.l.Sync(ctx, vmi); err != nil {
		t.Fatalf("Sync %s: %v", vmi.Name, err)
	}
}

// domainName is the libvirt name of vmi's domain.
func domainName(vmi *v1.VirtualMachineInstance) string {
	v := vmi.DeepCopy()
	if v.Namespace == "" {
		v.Namespace = "default"
	}
	return convert.DomainName(v)
}

// serialLog returns the VMI's serial console log so far.
func (e *env) serialLog(vmi *v1.VirtualMachineInstance) string {
	v := vmi.DeepCopy()
	b, _ := os.ReadFile(e.layout.Paths(v).SerialLog)
	return string(b)
}

// waitConsole waits until the guest printed its report, and returns it.
func (e *env) waitConsole(t testing.TB, vmi *v1.VirtualMachineInstance, timeout time.Duration) testguest.Report {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		text := e.serialLog(vmi)
		if strings.Contains(text, testguest.EndMarker) {
			r, err := testguest.ParseConsole(text)
			if err != nil {
				t.Fatalf("parse console of %s: %v\n%s", vmi.Name, err, text)
			}
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s printed no report within %s; console:\n%s", vmi.Name, timeout, text)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitLine waits until the guest's console holds s.
func (e *env) waitLine(t testing.TB, vmi *v1.VirtualMachineInstance, s string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !strings.Contains(e.serialLog(vmi), s) {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not print %q within %s; console:\n%s", vmi.Name, s, timeout, e.serialLog(vmi))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// lifecycleEvent is one libvirt lifecycle event seen by the test's own
// connection.
type lifecycleEvent struct {
	typ libvirt.DomainEventType
	at  time.Time
}

type lifecycleLog struct {
	mu       sync.Mutex
	byDomain map[string][]lifecycleEvent
}

func (l *lifecycleLog) add(name string, typ libvirt.DomainEventType, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.byDomain[name] = append(l.byDomain[name], lifecycleEvent{typ, at})
}

func (l *lifecycleLog) of(name string) []lifecycleEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]lifecycleEvent(nil), l.byDomain[name]...)
}

// count returns how many events of type typ domain name had.
func (l *lifecycleLog) count(name string, typ libvirt.DomainEventType) int {
	n := 0
	for _, ev := range l.of(name) {
		if ev.typ == typ {
			n++
		}
	}
	return n
}

// received is a Watch event with the time the test read it.
type received struct {
	ev launcher.Event
	at time.Time
}

// watchLog reads a Watch channel into per-VMI logs.
type watchLog struct {
	mu    sync.Mutex
	cond  *sync.Cond
	byVMI map[string][]received
}

func newWatchLog(ch <-chan launcher.Event) *watchLog {
	w := &watchLog{byVMI: map[string][]received{}}
	w.cond = sync.NewCond(&w.mu)
	go func() {
		for ev := range ch {
			now := time.Now()
			w.mu.Lock()
			w.byVMI[ev.Name] = append(w.byVMI[ev.Name], received{ev, now})
			w.cond.Broadcast()
			w.mu.Unlock()
		}
	}()
	return w
}

func (w *watchLog) of(name string) []received {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]received(nil), w.byVMI[name]...)
}

// waitFor waits until a Watch event of VMI name satisfies ok, and returns it.
func (w *watchLog) waitFor(t testing.TB, name, what string, timeout time.Duration, ok func(launcher.Event) bool) launcher.Event {
	t.Helper()
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() {
		w.mu.Lock()
		w.cond.Broadcast()
		w.mu.Unlock()
	})
	defer timer.Stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	for {
		for _, r := range w.byVMI[name] {
			if ok(r.ev) {
				return r.ev
			}
		}
		if time.Now().After(deadline) {
			var seen []string
			for _, r := range w.byVMI[name] {
				seen = append(seen, stateKey(r.ev.Status))
			}
			t.Fatalf("%s: no Watch event %s within %s; saw %v", name, what, timeout, seen)
		}
		w.cond.Wait()
	}
}

// waitPhase waits for a Watch event of VMI name in phase p.
func (w *watchLog) waitPhase(t testing.TB, name string, p v1.VirtualMachineInstancePhase, timeout time.Duration) launcher.Event {
	t.Helper()
	return w.waitFor(t, name, "phase "+string(p), timeout, func(ev launcher.Event) bool { return ev.Status.Phase == p })
}

// stateKey sums a status up as the transitions the tests follow: the
// phase, and the Paused condition's reason when there is one.
func stateKey(st v1.VirtualMachineInstanceStatus) string {
	k := string(st.Phase)
	if c := condition(st, v1.VirtualMachineInstancePaused); c != nil && c.Status == k8sv1.ConditionTrue {
		k += "/" + c.Reason
	}
	return k
}

func condition(st v1.VirtualMachineInstanceStatus, typ v1.VirtualMachineInstanceConditionType) *v1.VirtualMachineInstanceCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == typ {
			return &st.Conditions[i]
		}
	}
	return nil
}

// transitions returns the distinct consecutive state keys Watch delivered
// for VMI name, with the time the first event of each was read.
func (w *watchLog) transitions(name string) ([]string, []time.Time) {
	var keys []string
	var times []time.Time
	for _, r := range w.of(name) {
		k := stateKey(r.ev.Status)
		if len(keys) > 0 && keys[len(keys)-1] == k {
			continue
		}
		keys = append(keys, k)
		times = append(times, r.at)
	}
	return keys, times
}

// libvirtEventFor names the libvirt lifecycle event that causes a
// transition into each state key.
func libvirtEventFor(key string) libvirt.DomainEventType {
	switch {
	case key == string(v1.Scheduled):
		return libvirt.DOMAIN_EVENT_DEFINED
	case strings.HasPrefix(key, string(v1.Running)+"/"):
		return libvirt.DOMAIN_EVENT_SUSPENDED
	case key == string(v1.Running):
		return -1 // STARTED or RESUMED
	default:
		return libvirt.DOMAIN_EVENT_STOPPED
	}
}

// watchLag bounds how late Watch may deliver a transition after libvirt's
// event. The launcher has no poll, so every transition rides an event;
// the lag (the launcher reads the domain's state and status behind it) is
// logged, tens of milliseconds when idle, and has reached a second on
// this 2-core machine with the CI and other builds beside it (libvirt
// holds a killed QEMU's domain until it has cleaned it up).
const watchLag = 3 * time.Second

// checkTransitions asserts that Watch delivered exactly want (state keys,
// in order) for vmi, and each within watchLag of the libvirt lifecycle
// event behind it, as the test's own connection saw it. The event behind a
// transition is the last event of its kind, after the previous
// transition's, that came before the transition was delivered; when the
// launcher published first (its own call changed the state, or an earlier
// event such as the agent channel's at start-up revealed it), it is the
// next such event, and the lag is negative.
func (e *env) checkTransitions(t testing.TB, vmi *v1.VirtualMachineInstance, want []string) {
	t.Helper()
	keys, times := e.watch.transitions(vmi.Name)
	if strings.Join(keys, " → ") != strings.Join(want, " → ") {
		t.Errorf("%s: Watch transitions %v, want %v", vmi.Name, keys, want)
		return
	}
	events := e.events.of(domainName(vmi))
	last := -1
	for i, k := range keys {
		typ := libvirtEventFor(k)
		match := func(ev lifecycleEvent) bool {
			return ev.typ == typ || (typ == -1 && (ev.typ == libvirt.DOMAIN_EVENT_STARTED || ev.typ == libvirt.DOMAIN_EVENT_RESUMED))
		}
		chosen := -1
		for j := last + 1; j < len(events); j++ {
			if !match(events[j]) {
				continue
			}
			if !events[j].at.After(times[i]) || chosen < 0 {
				chosen = j
			}
			if events[j].at.After(times[i]) {
				break
			}
		}
		if chosen < 0 {
			t.Errorf("%s: no libvirt lifecycle event behind transition to %s (events %v)", vmi.Name, k, events)
			continue
		}
		last = chosen
		lag := times[i].Sub(events[chosen].at)
		if lag > watchLag {
			t.Errorf("%s: Watch delivered %s %s after libvirt's event", vmi.Name, k, lag)
		}
		t.Logf("%s: %s on Watch %+.1f ms after libvirt's event", vmi.Name, k, float64(lag.Microseconds())/1000)
	}
}
