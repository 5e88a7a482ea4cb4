package hostplan

import (
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

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
	if !AgentConnected(d) {
		t.Fatal("agent channel state connected not seen")
	}
	s := Snapshot{
		Obs: domain.Observation{Defined: true, State: domain.StateRunning, Reason: 1, ACPI: true,
			GracePeriod: true, AgentConnected: true, Started: true},
		Domain:          d,
		Interfaces:      []GuestInterface{{Name: "eth0", MAC: "02:00:00:AA:BB:CC", IPs: []string{"10.0.2.15", "fe80::1"}}},
		InterfaceSource: "guest-agent",
		GuestOS:         &v1.VirtualMachineInstanceGuestOSInfo{ID: "debian", PrettyName: "Debian GNU/Linux 12", KernelRelease: "6.1.0"},
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	prev := v1.VirtualMachineInstanceStatus{
		Phase: v1.Scheduled,
		Conditions: []v1.VirtualMachineInstanceCondition{{
			Type: v1.VirtualMachineInstanceReady, Status: k8sv1.ConditionFalse, Reason: "GuestNotRunning",
			LastTransitionTime: metav1.NewTime(t0)}},
	}
	t1 := t0.Add(time.Minute)
	st := Status(s, prev, prev.Phase, nil, t1)
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
	again := Status(s, st, st.Phase, nil, t1.Add(time.Second))
	if !SameStatus(st, again) {
		t.Errorf("same snapshot, different status")
	}
	if !again.Conditions[0].LastTransitionTime.Time.Equal(t1) || len(again.PhaseTransitionTimestamps) != 1 {
		t.Errorf("timestamps not kept: %+v", again)
	}
	// Paused by the user: a change.
	s.Obs.State, s.Obs.Reason = domain.StatePaused, domain.PausedUser
	paused := Status(s, st, st.Phase, nil, t1.Add(2*time.Second))
	if SameStatus(st, paused) {
		t.Error("pause not a change")
	}
	if len(paused.Interfaces) != 1 || paused.Phase != v1.Running {
		t.Errorf("paused status %+v", paused)
	}
}

func TestGracePeriod(t *testing.T) {
	vmi := &v1.VirtualMachineInstance{}
	if got := GracePeriod(vmi); got != 30*time.Second {
		t.Errorf("default grace period %s, want KubeVirt's 30s", got)
	}
	five := int64(5)
	vmi.Spec.TerminationGracePeriodSeconds = &five
	if got := GracePeriod(vmi); got != 5*time.Second {
		t.Errorf("grace period %s, want 5s", got)
	}
}

// TestJudgeFromMarks: what a restarted launcher, which has published
// nothing yet, reports from a domain's marks, whatever libvirt still knows
// of its state.
func TestJudgeFromMarks(t *testing.T) {
	at := time.Now().Add(-time.Hour)
	shutoff := func(r domain.Reason, m *Marks) Snapshot {
		return Snapshot{Obs: domain.Observation{Defined: true, State: domain.StateShutoff, Reason: r, ACPI: true},
			Domain: &libvirtxml.Domain{Name: "ns_x"}, Marks: m}
	}
	mk := func(started *Started, ended *Ended) *Marks {
		return &Marks{Owner: "o", VMI: VMIRef{Namespace: "ns", Name: "x", Grace: 30}, Started: started, Ended: ended}
	}
	for _, c := range []struct {
		name     string
		s        Snapshot
		starting bool
		want     string
	}{
		{"defined, never started", shutoff(domain.ShutoffUnknown, mk(nil, nil)), false, "Scheduled/"},
		{"powered off, reason known", shutoff(domain.ShutoffShutdown, mk(&Started{At: at}, nil)), false, "Succeeded/GuestShutdown"},
		{"ran, reason forgotten by libvirtd", shutoff(domain.ShutoffUnknown, mk(&Started{At: at}, nil)), false, "Failed/Unknown"},
		{"ended recorded, reason forgotten", shutoff(domain.ShutoffUnknown, mk(&Started{At: at}, &Ended{Phase: v1.Succeeded, Reason: "GuestShutdown"})), false, "Succeeded/GuestShutdown"},
		{"start interrupted", shutoff(domain.ShutoffUnknown, mk(&Started{At: at, Pending: true}, nil)), false, "Failed/StartInterrupted"},
		{"being started by us", shutoff(domain.ShutoffUnknown, mk(&Started{At: at, Pending: true}, nil)), true, "Scheduled/"},
	} {
		s := c.s
		from, end := Judge(&s, "", c.starting, nil)
		st := Status(s, v1.VirtualMachineInstanceStatus{}, from, end, time.Now())
		if got := string(st.Phase) + "/" + st.Reason; got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}
