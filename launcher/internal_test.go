package launcher

// Unit tests of the launcher's pieces that need no libvirtd.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

func TestConfigDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	if c.URI != "qemu:///system" || c.Layout.StateDir != "/var/lib/vmi2libvirt/vmis" || c.Layout.ImageStore != "/var/lib/vmi2libvirt/images" {
		t.Errorf("defaults: URI %q, StateDir %q, ImageStore %q", c.URI, c.Layout.StateDir, c.Layout.ImageStore)
	}
	if c.Logger == nil || c.KeepAliveInterval != 5*time.Second || c.KeepAliveCount != 3 ||
		c.ReconnectMin != 100*time.Millisecond || c.ReconnectMax != 5*time.Second {
		t.Errorf("defaults: %+v", c)
	}
	c = Config{URI: "qemu:///session", ReconnectMin: 10 * time.Second}.withDefaults()
	if c.URI != "qemu:///session" || c.ReconnectMax < c.ReconnectMin {
		t.Errorf("explicit values: URI %q, backoff %s..%s", c.URI, c.ReconnectMin, c.ReconnectMax)
	}
}

func TestErrorsUnwrap(t *testing.T) {
	// A libvirt error, as the bindings return it (a value), is found as
	// *LibvirtError and *libvirt.Error through the launcher's wrapping.
	err := wrapErr(fmt.Errorf("inner: %w", libvirt.Error{Code: libvirt.ERR_NO_DOMAIN, Message: "no domain"}), "look up %s", "x")
	var lverr *libvirt.Error
	if !errors.As(err, &lverr) || lverr.Code != libvirt.ERR_NO_DOMAIN {
		t.Fatalf("errors.As(*libvirt.Error) on %v: %v", err, lverr)
	}
	var le *LibvirtError
	if !errors.As(err, &le) || le.Code != int(libvirt.ERR_NO_DOMAIN) || le.Op != "look up x" || le.Message != "no domain" {
		t.Fatalf("errors.As(*LibvirtError) on %v: %+v", err, le)
	}
	if !isNoDomain(err) {
		t.Errorf("isNoDomain(%v) = false", err)
	}
	if !strings.HasPrefix(err.Error(), "launcher: look up x: ") {
		t.Errorf("message %q", err)
	}
	if wrapErr(nil, "x") != nil {
		t.Error("wrapErr(nil) != nil")
	}
	// Wrapping twice keeps the first operation.
	twice := wrapErr(err, "sync %s", "y")
	if !errors.As(twice, &le) || le.Op != "look up x" {
		t.Errorf("twice: %v", twice)
	}

	// Validation errors are found as *field.Error.
	path := field.NewPath("spec", "domain", "devices", "disks").Index(0).Child("disk", "bus")
	inv := &InvalidError{Stage: "artifacts", Errors: field.ErrorList{
		field.NotSupported(path, "ide", []string{"virtio", "sata"}),
		field.Required(field.NewPath("spec", "domain"), ""),
	}}
	var ferr *field.Error
	var wrapped error = fmt.Errorf("sync: %w", inv)
	if !errors.As(wrapped, &ferr) || ferr.Field != path.String() || !errors.Is(wrapped, ErrInvalid) {
		t.Fatalf("errors.As(*field.Error) = %v", ferr)
	}
	if !strings.Contains(inv.Error(), "spec.domain.devices.disks[0].disk.bus") {
		t.Errorf("message %q does not name the field", inv.Error())
	}
}

// TestErrorClasses pins the class of each kind of error a reconciler sees:
// exactly one of ErrInvalid, ErrHostNotReady, ErrUnavailable and
// ErrConflict, or none for a call that does not fit the domain's state.
func TestErrorClasses(t *testing.T) {
	classes := []error{ErrInvalid, ErrHostNotReady, ErrUnavailable, ErrConflict}
	lv := func(code libvirt.ErrorNumber) error {
		return wrapErr(libvirt.Error{Code: code, Message: "m"}, "op")
	}
	fe := field.Invalid(field.NewPath("spec", "volumes").Index(0).Child("containerDisk", "image"), "x", "image not found in the image store")
	for _, c := range []struct {
		name string
		err  error
		want error // nil: no class
	}{
		{"invalid VMI", &InvalidError{Stage: "validate", Errors: field.ErrorList{fe}}, ErrInvalid},
		{"image not in the store", withVMI(notReady(fe), "ns/x"), ErrHostNotReady},
		{"libvirt refuses the domain", lv(libvirt.ERR_CONFIG_UNSUPPORTED), ErrHostNotReady},
		{"bridge missing at start", lv(libvirt.ERR_SYSTEM_ERROR), ErrHostNotReady},
		{"connection refused", unavailable(lv(libvirt.ERR_SYSTEM_ERROR)), ErrUnavailable},
		{"RPC failure", lv(libvirt.ERR_RPC), ErrUnavailable},
		{"no connection", lv(libvirt.ERR_NO_CONNECT), ErrUnavailable},
		{"waiting for a connection", unavailable(context.DeadlineExceeded), ErrUnavailable},
		{"another owner", &ConflictError{Domain: "ns_x", Owner: "node-b", Reason: "r"}, ErrConflict},
		{"pause of a domain that is off", lv(libvirt.ERR_OPERATION_INVALID), nil},
		{"no domain", lv(libvirt.ERR_NO_DOMAIN), nil},
	} {
		wrapped := fmt.Errorf("reconcile: %w", c.err)
		for _, class := range classes {
			if got := errors.Is(wrapped, class); got != (class == c.want) {
				t.Errorf("%s: errors.Is(%v) = %v", c.name, class, got)
			}
		}
	}
	var he *HostError
	if err := withVMI(notReady(fe), "ns/x"); !errors.As(err, &he) || he.VMI != "ns/x" || !strings.Contains(err.Error(), "spec.volumes[0].containerDisk.image") {
		t.Errorf("host error %v does not name the VMI and the field", err)
	}
}

// TestMarksRoundTrip: the launcher's element survives being written into a
// domain's metadata and read back, from libvirtxml's form and from the
// form libvirt gives back (its own prefix and whitespace).
func TestMarksRoundTrip(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	m := &marks{Owner: "node-a", VMI: vmiIdentity{Namespace: "ns", Name: "x", UID: "u-1", Grace: 30}, Hash: "abc",
		Started:  &startedMark{At: at, Pending: true},
		Shutdown: &shutdownMark{Requested: at, Deadline: at.Add(30 * time.Second)},
		Ended:    &endedMark{Phase: v1.Failed, Reason: "Destroyed", At: at.Add(time.Minute)}}
	d := &libvirtxml.Domain{Type: "qemu", Name: "ns_x"}
	if err := setMarks(d, m); err != nil {
		t.Fatal(err)
	}
	raw, err := d.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := domain.Unmarshal([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	got, err := marksOf(back)
	if err != nil || got == nil {
		t.Fatalf("marksOf: %v, %v\n%s", got, err, raw)
	}
	if got.Owner != m.Owner || got.VMI != m.VMI || got.Hash != m.Hash || !got.Started.At.Equal(at) || !got.Started.Pending ||
		!got.Shutdown.Deadline.Equal(m.Shutdown.Deadline) || *got.Ended != *m.Ended {
		t.Errorf("round trip: %+v, want %+v", got, m)
	}
	libvirtStyle := `<vmi2libvirt:launcher xmlns:vmi2libvirt="` + metadataNS + `">
    <vmi2libvirt:owner>node-a</vmi2libvirt:owner>
    <vmi2libvirt:vmi namespace="ns" name="x" uid="u-1" grace="30"/>
    <vmi2libvirt:hash>abc</vmi2libvirt:hash>
  </vmi2libvirt:launcher>`
	if got, err := parseMarks(libvirtStyle); err != nil || got == nil || got.Owner != "node-a" || got.VMI.Grace != 30 || got.ran() {
		t.Errorf("libvirt's form: %+v, %v", got, err)
	}
	// libvirt's GetMetadata gives the element without its namespace.
	if got, err := parseMetadataElement("<launcher>\n  <owner>node-a</owner>\n  <vmi namespace=\"ns\" name=\"x\" grace=\"5\"/>\n</launcher>"); err != nil || got == nil || got.Owner != "node-a" || got.VMI.Grace != 5 {
		t.Errorf("GetMetadata's form: %+v, %v", got, err)
	}
	for _, other := range []string{"", `<other xmlns="urn:o"><owner>x</owner></other>`, "not xml"} {
		if got, _ := parseMarks(other); got != nil {
			t.Errorf("parseMarks(%q) = %+v, want nil", other, got)
		}
	}
}

// TestQEMULogEnd reads how a domain stopped from libvirt's log of it, as
// libvirt 9.0 writes it, ignoring stops before the start in question.
func TestQEMULogEnd(t *testing.T) {
	log := []byte(`2026-12-01 15:36:52.098+0000: starting up libvirt version: 9.0.0
LC_ALL=C /usr/bin/qemu-system-x86_64 -name guest=default_tiny
2026-12-01T15:37:36.900028Z qemu-system-x86_64: terminating on signal 15 from pid 8732 (libvirtd)
2026-12-01 15:37:38.107+0000: shutting down, reason=destroyed
2026-12-01 15:40:00.000+0000: starting up libvirt version: 9.0.0
2026-12-01 15:41:00.500+0000: shutting down, reason=shutdown
`)
	if r, ok := lastShutoffReason(log, time.Date(2026, 12, 1, 15, 39, 0, 0, time.UTC)); !ok || r != domain.ShutoffShutdown {
		t.Errorf("after the second start: %v %v, want shutdown", r, ok)
	}
	if r, ok := lastShutoffReason(log, time.Date(2026, 12, 1, 15, 38, 0, 0, time.UTC)); !ok || r != domain.ShutoffShutdown {
		t.Errorf("the last stop: %v %v", r, ok)
	}
	if _, ok := lastShutoffReason(log, time.Date(2026, 12, 1, 16, 0, 0, 0, time.UTC)); ok {
		t.Error("a stop before the start counts")
	}
}

func TestEventQueueNeverBlocks(t *testing.T) {
	var q eventQueue
	q.init()
	for i := range eventQueueSize + 10 {
		q.put(fmt.Sprintf("d%d", i%(eventQueueSize+5)), time.Unix(int64(i), 0))
	}
	if got := q.drops.Load(); got != 10 {
		t.Errorf("drops = %d, want 10", got)
	}
	over := q.takeOverflow()
	// The 10 that did not fit name 10 domains (d1024..d1028, then d0..d4).
	if len(over) != 10 {
		t.Errorf("overflow holds %d domains, want 10: %v", len(over), over)
	}
	if _, ok := over["d0"]; !ok {
		t.Errorf("overflow lacks d0: %v", over)
	}
	select {
	case <-q.kick:
	default:
		t.Error("no kick after an overflow")
	}
	if len(q.takeOverflow()) != 0 {
		t.Error("takeOverflow does not clear")
	}
}

func TestSubscriberKeepsLatest(t *testing.T) {
	s := &subscriber{perVMI: map[string]int{}, seen: map[string]bool{}, kick: make(chan struct{}, 1)}
	ev := func(name string, p v1.VirtualMachineInstancePhase) Event {
		return Event{Namespace: "ns", Name: name, Status: v1.VirtualMachineInstanceStatus{Phase: p}}
	}
	s.offer(ev("a", v1.Scheduled), false)
	s.offer(ev("b", v1.Scheduled), false)
	// An initial snapshot after a change of the same VMI is not queued.
	s.offer(ev("a", v1.Pending), true)
	for range maxQueuedPerVMI + 5 {
		s.offer(ev("a", v1.Running), false)
	}
	s.offer(ev("a", v1.Succeeded), false)
	var got []string
	for {
		e, ok := s.next()
		if !ok {
			break
		}
		got = append(got, e.Name+":"+string(e.Status.Phase))
	}
	if len(got) != maxQueuedPerVMI+1 {
		t.Fatalf("%d events queued, want %d (b, then a's bounded queue): %v", len(got), maxQueuedPerVMI+1, got)
	}
	if got[0] != "b:Scheduled" {
		t.Errorf("first event %s, want b:Scheduled (a's oldest dropped)", got[0])
	}
	if last := got[len(got)-1]; last != "a:Succeeded" {
		t.Errorf("last event %s, want the latest a:Succeeded", last)
	}
	if s.dropped != 7 {
		t.Errorf("dropped %d, want 7", s.dropped)
	}
	if len(s.perVMI) != 0 {
		t.Errorf("per-VMI counts left: %v", s.perVMI)
	}
}

// liveXML is a domain as libvirt reports it while running, with a guest
// agent channel and two interfaces (one the user named, one not).
const liveXML = `<domain type='qemu' id='3'>
  <name>ns_x</name>
  <os><type arch='x86_64' machine='pc-q35-7.2'>hvm</type></os>
  <features><acpi/></features>
  <devices>
    <interface type='user'>
      <mac address='02:00:00:aa:bb:cc'/>
      <model type='virtio-non-transitional'/>
      <alias name='ua-default'/>
    </interface>
    <interface type='user'>
      <mac address='52:54:00:00:00:01'/>
      <alias name='net1'/>
    </interface>
    <channel type='unix'>
      <target type='virtio' name='org.qemu.guest_agent.0' state='connected'/>
    </channel>
  </devices>
</domain>`

func TestBuildStatus(t *testing.T) {
	d, err := domain.Unmarshal([]byte(liveXML))
	if err != nil {
		t.Fatal(err)
	}
	if !agentConnected(d) {
		t.Fatal("agent channel state connected not seen")
	}
	s := snapshot{
		obs: domain.Observation{Defined: true, State: domain.StateRunning, Reason: 1, ACPI: true,
			GracePeriod: true, AgentConnected: true, Started: true},
		cur: currentDomain{exists: true, xml: d},
		ifaces: []libvirt.DomainInterface{{Name: "eth0", Hwaddr: "02:00:00:AA:BB:CC",
			Addrs: []libvirt.DomainIPAddress{{Addr: "10.0.2.15", Prefix: 24}, {Addr: "fe80::1", Prefix: 64}}}},
		ipSrc: "guest-agent",
		os:    &libvirt.DomainGuestInfoOS{ID: "debian", PrettyName: "Debian GNU/Linux 12", KernelRelease: "6.1.0"},
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	prev := v1.VirtualMachineInstanceStatus{
		Phase: v1.Scheduled,
		Conditions: []v1.VirtualMachineInstanceCondition{{
			Type: v1.VirtualMachineInstanceReady, Status: k8sv1.ConditionFalse, Reason: "GuestNotRunning",
			LastTransitionTime: metav1.NewTime(t0)}},
	}
	t1 := t0.Add(time.Minute)
	st := buildStatus(s, prev, prev.Phase, nil, t1)
	if st.Phase != v1.Running {
		t.Errorf("phase %s", st.Phase)
	}
	if len(st.PhaseTransitionTimestamps) != 1 || st.PhaseTransitionTimestamps[0].Phase != v1.Running {
		t.Errorf("phase transitions %+v", st.PhaseTransitionTimestamps)
	}
	if len(st.Conditions) != 2 || st.Conditions[0].Type != v1.VirtualMachineInstanceReady ||
		st.Conditions[0].Status != k8sv1.ConditionTrue || !st.Conditions[0].LastTransitionTime.Time.Equal(t1) ||
		st.Conditions[1].Type != v1.VirtualMachineInstanceAgentConnected {
		t.Errorf("conditions %+v", st.Conditions)
	}
	if st.Machine == nil || st.Machine.Type != "pc-q35-7.2" {
		t.Errorf("machine %+v", st.Machine)
	}
	if len(st.Interfaces) != 1 {
		t.Fatalf("interfaces %+v, want only the user-named one", st.Interfaces)
	}
	i := st.Interfaces[0]
	if i.Name != "default" || i.MAC != "02:00:00:aa:bb:cc" || i.IP != "10.0.2.15" ||
		len(i.IPs) != 2 || i.InterfaceName != "eth0" || i.InfoSource != "domain, guest-agent" {
		t.Errorf("interface %+v", i)
	}
	if st.GuestOSInfo.PrettyName != "Debian GNU/Linux 12" || st.GuestOSInfo.ID != "debian" {
		t.Errorf("guest OS %+v", st.GuestOSInfo)
	}

	// Read again a moment later: the same status, timestamps kept.
	again := buildStatus(s, st, st.Phase, nil, t1.Add(time.Second))
	if !sameStatus(st, again) {
		t.Errorf("same snapshot, different status")
	}
	if !again.Conditions[0].LastTransitionTime.Time.Equal(t1) || len(again.PhaseTransitionTimestamps) != 1 {
		t.Errorf("timestamps not kept: %+v", again)
	}
	// Paused by the user: a change.
	s.obs.State, s.obs.Reason = domain.StatePaused, domain.PausedUser
	paused := buildStatus(s, st, st.Phase, nil, t1.Add(2*time.Second))
	if sameStatus(st, paused) {
		t.Error("pause not a change")
	}
	if len(paused.Interfaces) != 1 || paused.Phase != v1.Running {
		t.Errorf("paused status %+v", paused)
	}
}

func TestGracePeriod(t *testing.T) {
	vmi := &v1.VirtualMachineInstance{}
	if got := gracePeriod(vmi); got != 30*time.Second {
		t.Errorf("default grace period %s, want KubeVirt's 30s", got)
	}
	five := int64(5)
	vmi.Spec.TerminationGracePeriodSeconds = &five
	if got := gracePeriod(vmi); got != 5*time.Second {
		t.Errorf("grace period %s, want 5s", got)
	}
}

// TestJudgeFromMarks: what a restarted launcher, which has published
// nothing yet, reports from a domain's marks, whatever libvirt still knows
// of its state.
func TestJudgeFromMarks(t *testing.T) {
	l := &Launcher{cfg: Config{URI: "test:///default"}}
	at := time.Now().Add(-time.Hour)
	shutoff := func(r domain.Reason, m *marks) snapshot {
		return snapshot{obs: domain.Observation{Defined: true, State: domain.StateShutoff, Reason: r, ACPI: true},
			cur: currentDomain{exists: true, state: domain.StateShutoff, reason: r, marks: m, xml: &libvirtxml.Domain{Name: "ns_x"}}}
	}
	mk := func(started *startedMark, ended *endedMark) *marks {
		return &marks{Owner: "o", VMI: vmiIdentity{Namespace: "ns", Name: "x", Grace: 30}, Started: started, Ended: ended}
	}
	for _, c := range []struct {
		name     string
		s        snapshot
		starting bool
		want     string
	}{
		{"defined, never started", shutoff(domain.ShutoffUnknown, mk(nil, nil)), false, "Scheduled/"},
		{"powered off, reason known", shutoff(domain.ShutoffShutdown, mk(&startedMark{At: at}, nil)), false, "Succeeded/GuestShutdown"},
		{"ran, reason forgotten by libvirtd", shutoff(domain.ShutoffUnknown, mk(&startedMark{At: at}, nil)), false, "Failed/Unknown"},
		{"ended recorded, reason forgotten", shutoff(domain.ShutoffUnknown, mk(&startedMark{At: at}, &endedMark{Phase: v1.Succeeded, Reason: "GuestShutdown"})), false, "Succeeded/GuestShutdown"},
		{"start interrupted", shutoff(domain.ShutoffUnknown, mk(&startedMark{At: at, Pending: true}, nil)), false, "Failed/StartInterrupted"},
		{"being started by us", shutoff(domain.ShutoffUnknown, mk(&startedMark{At: at, Pending: true}, nil)), true, "Scheduled/"},
	} {
		s := c.s
		from, end := l.judge(&s, "", c.starting)
		st := buildStatus(s, v1.VirtualMachineInstanceStatus{}, from, end, time.Now())
		if got := string(st.Phase) + "/" + st.Reason; got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
