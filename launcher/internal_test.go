package launcher

// Unit tests of the launcher's pieces that need no libvirtd.

import (
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
	// *libvirt.Error through the launcher's wrapping.
	err := wrapErr(fmt.Errorf("inner: %w", libvirt.Error{Code: libvirt.ERR_NO_DOMAIN, Message: "no domain"}), "look up %s", "x")
	var lverr *libvirt.Error
	if !errors.As(err, &lverr) || lverr.Code != libvirt.ERR_NO_DOMAIN {
		t.Fatalf("errors.As(*libvirt.Error) on %v: %v", err, lverr)
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

	// Validation errors are found as *field.Error.
	path := field.NewPath("spec", "domain", "devices", "disks").Index(0).Child("disk", "bus")
	inv := &InvalidError{VMI: "ns/x", Errors: field.ErrorList{
		field.NotSupported(path, "ide", []string{"virtio", "sata"}),
		field.Required(field.NewPath("spec", "domain"), ""),
	}}
	var ferr *field.Error
	var wrapped error = fmt.Errorf("sync: %w", inv)
	if !errors.As(wrapped, &ferr) || ferr.Field != path.String() {
		t.Fatalf("errors.As(*field.Error) = %v", ferr)
	}
	if !strings.Contains(inv.Error(), "spec.domain.devices.disks[0].disk.bus") {
		t.Errorf("message %q does not name the field", inv.Error())
	}

	// The refusal of Debian's libvirt 9.0 to define <maxMemory> without
	// slots, as libvirtd words it.
	refusal := wrapErr(libvirt.Error{Code: libvirt.ERR_XML_ERROR,
		Message: "XML error: both maximum memory size and memory slot count must be specified"}, "define")
	if !isMemoryHotplugRefusal(refusal) {
		t.Errorf("isMemoryHotplugRefusal(%v) = false", refusal)
	}
	schemaRefusal := wrapErr(libvirt.Error{Code: libvirt.ERR_XML_INVALID_SCHEMA,
		Message: "XML document failed to validate against schema: Unable to validate doc against /usr/share/libvirt/schemas/domain.rng\nExtra element maxMemory in interleave"}, "define")
	if !isMemoryHotplugRefusal(schemaRefusal) {
		t.Errorf("isMemoryHotplugRefusal(%v) = false", schemaRefusal)
	}
	if isMemoryHotplugRefusal(wrapErr(libvirt.Error{Code: libvirt.ERR_XML_ERROR, Message: "XML error: bad disk"}, "define")) {
		t.Error("an unrelated XML error counts as a memory hotplug refusal")
	}
}

func TestSyncMetadata(t *testing.T) {
	d := &libvirtxml.Domain{Type: "qemu", Name: "ns_x",
		Metadata: &libvirtxml.DomainMetadata{XML: `<kubevirt xmlns="http://kubevirt.io"><uid>u</uid></kubevirt>`}}
	addSyncMetadata(d, "abc123")
	raw, err := d.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if got := definedHash(raw); got != "abc123" {
		t.Errorf("definedHash of our own XML = %q\n%s", got, raw)
	}
	// libvirt gives metadata elements back with their own namespace
	// declarations, whitespace and attribute quoting of its own.
	libvirtStyle := `<domain type='qemu'><name>ns_x</name><metadata>
    <kubevirt xmlns="http://kubevirt.io"><uid>u</uid></kubevirt>
    <vmi2libvirt:sync xmlns:vmi2libvirt="` + metadataNS + `">
      <vmi2libvirt:hash>abc123</vmi2libvirt:hash>
    </vmi2libvirt:sync>
  </metadata></domain>`
	if got := definedHash(libvirtStyle); got != "abc123" {
		t.Errorf("definedHash of libvirt's XML = %q", got)
	}
	for _, raw := range []string{
		`<domain type='qemu'><name>x</name></domain>`,
		`<domain type='qemu'><name>x</name><metadata><other xmlns="urn:o"><hash>zzz</hash></other></metadata></domain>`,
		`not xml`,
	} {
		if got := definedHash(raw); got != "" {
			t.Errorf("definedHash(%q) = %q, want empty", raw, got)
		}
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
		xml: d,
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
	st := buildStatus(s, prev, t1)
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
	again := buildStatus(s, st, t1.Add(time.Second))
	if !sameStatus(st, again) {
		t.Errorf("same snapshot, different status")
	}
	if !again.Conditions[0].LastTransitionTime.Time.Equal(t1) || len(again.PhaseTransitionTimestamps) != 1 {
		t.Errorf("timestamps not kept: %+v", again)
	}
	// Paused by the user: a change.
	s.obs.State, s.obs.Reason = domain.StatePaused, domain.PausedUser
	paused := buildStatus(s, st, t1.Add(2*time.Second))
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
