package agent

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"
)

// Times of the cases: the object's (whole seconds, as the API server
// stores them), the launcher's (with nanoseconds), and now.
var (
	t0  = time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	t1  = t0.Add(1 * time.Second)
	t2  = t0.Add(2*time.Second + 300*time.Millisecond)
	t3  = t0.Add(3*time.Second + 700*time.Millisecond)
	now = t0.Add(time.Hour + 500*time.Millisecond)
)

func mt(t time.Time) metav1.Time { return metav1.NewTime(t) }

func transitions(pts ...any) []v1.VirtualMachineInstancePhaseTransitionTimestamp {
	var out []v1.VirtualMachineInstancePhaseTransitionTimestamp
	for i := 0; i < len(pts); i += 2 {
		out = append(out, v1.VirtualMachineInstancePhaseTransitionTimestamp{
			Phase: pts[i].(v1.VirtualMachineInstancePhase), PhaseTransitionTimestamp: mt(pts[i+1].(time.Time)),
		})
	}
	return out
}

func cond(typ v1.VirtualMachineInstanceConditionType, status k8sv1.ConditionStatus, reason string, at time.Time) v1.VirtualMachineInstanceCondition {
	return v1.VirtualMachineInstanceCondition{Type: typ, Status: status, Reason: reason, LastTransitionTime: mt(at)}
}

var (
	readyTrue = func(at time.Time) v1.VirtualMachineInstanceCondition {
		return cond(v1.VirtualMachineInstanceReady, "True", "", at)
	}
	notRunning = func(at time.Time) v1.VirtualMachineInstanceCondition {
		c := cond(v1.VirtualMachineInstanceReady, "False", v1.GuestNotRunningReason, at)
		c.Message = "Guest VM is not reported as running"
		return c
	}
	syncFailed = func(msg string, at time.Time) v1.VirtualMachineInstanceCondition {
		c := cond(v1.VirtualMachineInstanceSynchronized, "False", syncFailedReason, at)
		c.Message = msg
		return c
	}
)

// running is what the launcher reports of a running guest it started: its
// own transitions and condition times, with nanoseconds.
func running() v1.VirtualMachineInstanceStatus {
	return v1.VirtualMachineInstanceStatus{
		Phase:                     v1.Running,
		PhaseTransitionTimestamps: transitions(v1.Scheduled, t2, v1.Running, t3),
		Conditions:                []v1.VirtualMachineInstanceCondition{readyTrue(t3)},
		Interfaces:                []v1.VirtualMachineInstanceNetworkInterface{{Name: "default", MAC: "52:54:00:00:00:01", InfoSource: "domain"}},
		Machine:                   &v1.Machine{Type: "pc-q35-7.2"},
	}
}

func TestDesiredStatus(t *testing.T) {
	invalid := errors.New(`spec.domain.devices.interfaces[0].model: Unsupported value: "virtio-net"`)
	hostNotReady := errors.New("launcher: host not ready for ns/vmi: HostLayout.StateDir /x is not a folder")
	cases := []struct {
		name     string
		cur      v1.VirtualMachineInstanceStatus
		observed v1.VirtualMachineInstanceStatus
		sync     syncResult
		want     v1.VirtualMachineInstanceStatus
	}{
		{
			name:     "a new VMI runs: the launcher's transitions and times, to the second",
			observed: running(),
			want: v1.VirtualMachineInstanceStatus{
				NodeName:                  "node01",
				Phase:                     v1.Running,
				PhaseTransitionTimestamps: transitions(v1.Scheduled, t2.Truncate(time.Second), v1.Running, t3.Truncate(time.Second)),
				Conditions:                []v1.VirtualMachineInstanceCondition{readyTrue(t3.Truncate(time.Second))},
				Interfaces:                running().Interfaces,
				Machine:                   running().Machine,
			},
		},
		{
			name: "adopted by a restarted agent: the object's record continues",
			cur: v1.VirtualMachineInstanceStatus{
				NodeName: "node01", Phase: v1.Running,
				PhaseTransitionTimestamps: transitions(v1.Scheduled, t0, v1.Running, t1),
				Conditions:                []v1.VirtualMachineInstanceCondition{readyTrue(t1)},
				Interfaces:                running().Interfaces,
				Machine:                   running().Machine,
			},
			// A new launcher saw the guest Running now, and nothing before.
			observed: func() v1.VirtualMachineInstanceStatus {
				s := running()
				s.PhaseTransitionTimestamps = transitions(v1.Running, now)
				s.Conditions = []v1.VirtualMachineInstanceCondition{readyTrue(now)}
				return s
			}(),
			want: v1.VirtualMachineInstanceStatus{
				NodeName: "node01", Phase: v1.Running,
				PhaseTransitionTimestamps: transitions(v1.Scheduled, t0, v1.Running, t1),
				Conditions:                []v1.VirtualMachineInstanceCondition{readyTrue(t1)},
				Interfaces:                running().Interfaces,
				Machine:                   running().Machine,
			},
		},
		{
			name:     "refused: Failed once, reason Invalid, the field in Synchronized",
			observed: v1.VirtualMachineInstanceStatus{},
			sync:     syncResult{Err: invalid, Refused: true},
			want: v1.VirtualMachineInstanceStatus{
				NodeName: "node01", Phase: v1.Failed, Reason: reasonInvalid,
				PhaseTransitionTimestamps: transitions(v1.Failed, now.Truncate(time.Second)),
				Conditions:                []v1.VirtualMachineInstanceCondition{syncFailed(invalid.Error(), now.Truncate(time.Second))},
			},
		},
		{
			name:     "host not ready: Pending, the reason in Synchronized",
			observed: v1.VirtualMachineInstanceStatus{Phase: v1.Pending, PhaseTransitionTimestamps: transitions(v1.Pending, t2), Conditions: []v1.VirtualMachineInstanceCondition{notRunning(t2)}},
			sync:     syncResult{Err: hostNotReady},
			want: v1.VirtualMachineInstanceStatus{
				NodeName: "node01", Phase: v1.Pending,
				PhaseTransitionTimestamps: transitions(v1.Pending, t2.Truncate(time.Second)),
				Conditions:                []v1.VirtualMachineInstanceCondition{notRunning(t2.Truncate(time.Second)), syncFailed(hostNotReady.Error(), now.Truncate(time.Second))},
			},
		},
		{
			name: "the host is ready again: Synchronized goes, Pending is kept in the record",
			cur: v1.VirtualMachineInstanceStatus{
				NodeName: "node01", Phase: v1.Pending,
				PhaseTransitionTimestamps: transitions(v1.Pending, t0),
				Conditions:                []v1.VirtualMachineInstanceCondition{notRunning(t0), syncFailed(hostNotReady.Error(), t0)},
			},
			observed: running(),
			want: v1.VirtualMachineInstanceStatus{
				NodeName: "node01", Phase: v1.Running,
				PhaseTransitionTimestamps: transitions(v1.Pending, t0, v1.Scheduled, t2.Truncate(time.Second), v1.Running, t3.Truncate(time.Second)),
				Conditions:                []v1.VirtualMachineInstanceCondition{readyTrue(t3.Truncate(time.Second))},
				Interfaces:                running().Interfaces,
				Machine:                   running().Machine,
			},
		},
		{
			name: "a phase never goes back",
			cur: v1.VirtualMachineInstanceStatus{
				NodeName: "node01", Phase: v1.Running,
				PhaseTransitionTimestamps: transitions(v1.Scheduled, t0, v1.Running, t1),
			},
			observed: v1.VirtualMachineInstanceStatus{Phase: v1.Pending, PhaseTransitionTimestamps: transitions(v1.Pending, now)},
			want: v1.VirtualMachineInstanceStatus{
				NodeName: "node01", Phase: v1.Running,
				PhaseTransitionTimestamps: transitions(v1.Scheduled, t0, v1.Running, t1),
			},
		},
		{
			name: "a libvirt event, no sync: the Synchronized condition stays",
			cur: v1.VirtualMachineInstanceStatus{
				NodeName: "node01", Phase: v1.Running,
				PhaseTransitionTimestamps: transitions(v1.Scheduled, t0, v1.Running, t1),
				Conditions:                []v1.VirtualMachineInstanceCondition{readyTrue(t1), syncFailed(hostNotReady.Error(), t1)},
			},
			observed: func() v1.VirtualMachineInstanceStatus {
				s := running()
				s.Conditions = append(s.Conditions, cond(v1.VirtualMachineInstanceAgentConnected, "True", "", t3))
				return s
			}(),
			sync: syncResult{Unknown: true},
			want: v1.VirtualMachineInstanceStatus{
				NodeName: "node01", Phase: v1.Running,
				PhaseTransitionTimestamps: transitions(v1.Scheduled, t0, v1.Running, t1),
				Conditions: []v1.VirtualMachineInstanceCondition{
					readyTrue(t1), cond(v1.VirtualMachineInstanceAgentConnected, "True", "", t3.Truncate(time.Second)), syncFailed(hostNotReady.Error(), t1),
				},
				Interfaces: running().Interfaces,
				Machine:    running().Machine,
			},
		},
		{
			name:     "a final phase is kept as it is",
			cur:      v1.VirtualMachineInstanceStatus{Phase: v1.Succeeded, Reason: "GuestShutdown", PhaseTransitionTimestamps: transitions(v1.Succeeded, t0)},
			observed: running(),
			sync:     syncResult{Err: hostNotReady},
			want:     v1.VirtualMachineInstanceStatus{Phase: v1.Succeeded, Reason: "GuestShutdown", PhaseTransitionTimestamps: transitions(v1.Succeeded, t0)},
		},
		{
			name: "the guest powered off: Succeeded with the launcher's reason",
			cur: v1.VirtualMachineInstanceStatus{
				NodeName: "node01", Phase: v1.Running,
				PhaseTransitionTimestamps: transitions(v1.Scheduled, t0, v1.Running, t1),
				Conditions:                []v1.VirtualMachineInstanceCondition{readyTrue(t1)},
				Interfaces:                running().Interfaces,
			},
			observed: v1.VirtualMachineInstanceStatus{
				Phase: v1.Succeeded, Reason: "GuestShutdown",
				PhaseTransitionTimestamps: transitions(v1.Running, t0, v1.Succeeded, t3),
				Conditions:                []v1.VirtualMachineInstanceCondition{notRunning(t3)},
			},
			want: v1.VirtualMachineInstanceStatus{
				NodeName: "node01", Phase: v1.Succeeded, Reason: "GuestShutdown",
				PhaseTransitionTimestamps: transitions(v1.Scheduled, t0, v1.Running, t1, v1.Succeeded, t3.Truncate(time.Second)),
				Conditions:                []v1.VirtualMachineInstanceCondition{notRunning(t3.Truncate(time.Second))},
			},
		},
		{
			name: "conditions of others are kept, in their place",
			cur: v1.VirtualMachineInstanceStatus{
				NodeName: "node01", Phase: v1.Running,
				PhaseTransitionTimestamps: transitions(v1.Scheduled, t0, v1.Running, t1),
				Conditions: []v1.VirtualMachineInstanceCondition{
					cond(v1.VirtualMachineInstanceIsMigratable, "False", "NotMigratable", t0),
					readyTrue(t1),
				},
			},
			observed: func() v1.VirtualMachineInstanceStatus {
				s := running()
				s.Conditions = []v1.VirtualMachineInstanceCondition{
					cond(v1.VirtualMachineInstanceReady, "False", "Paused", t3),
					cond(v1.VirtualMachineInstancePaused, "True", "PausedByUser", t3),
				}
				return s
			}(),
			want: v1.VirtualMachineInstanceStatus{
				NodeName: "node01", Phase: v1.Running,
				PhaseTransitionTimestamps: transitions(v1.Scheduled, t0, v1.Running, t1),
				Conditions: []v1.VirtualMachineInstanceCondition{
					cond(v1.VirtualMachineInstanceIsMigratable, "False", "NotMigratable", t0),
					cond(v1.VirtualMachineInstanceReady, "False", "Paused", t3.Truncate(time.Second)),
					cond(v1.VirtualMachineInstancePaused, "True", "PausedByUser", t3.Truncate(time.Second)),
				},
				Interfaces: running().Interfaces,
				Machine:    running().Machine,
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := desiredStatus(c.cur, c.observed, "node01", c.sync, now)
			if !equality.Semantic.DeepEqual(got, c.want) {
				t.Fatalf("desiredStatus (-want +got):\n%s", cmp.Diff(c.want, got))
			}
			// What the API server stores and gives back is what was
			// written (whole seconds), and a second reconcile from it,
			// an hour later, writes nothing: no write loop.
			data, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var stored v1.VirtualMachineInstanceStatus
			if err := json.Unmarshal(data, &stored); err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(stored, got) {
				t.Errorf("the status changes through JSON (-written +stored):\n%s", cmp.Diff(got, stored))
			}
			again := desiredStatus(stored, c.observed, "node01", c.sync, now.Add(time.Hour))
			if !equality.Semantic.DeepEqual(again, stored) {
				t.Errorf("a second reconcile would write again (-stored +again):\n%s", cmp.Diff(stored, again))
			}
		})
	}
}

func TestNewPhases(t *testing.T) {
	before := v1.VirtualMachineInstanceStatus{PhaseTransitionTimestamps: transitions(v1.Scheduled, t0)}
	after := v1.VirtualMachineInstanceStatus{PhaseTransitionTimestamps: transitions(v1.Scheduled, t0, v1.Running, t1, v1.Succeeded, t2)}
	got := newPhases(before, after)
	if want := transitions(v1.Running, t1, v1.Succeeded, t2); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("newPhases (-want +got):\n%s", cmp.Diff(want, got))
	}
	if got := newPhases(after, after); len(got) != 0 {
		t.Errorf("newPhases of an unchanged status: %v", got)
	}
}

func TestDeletedEnd(t *testing.T) {
	for _, c := range []struct {
		observed, want v1.VirtualMachineInstancePhase
	}{
		{v1.Pending, v1.Failed},
		{v1.Scheduled, v1.Failed}, // defined, never started: the soak's seed 5
		{v1.Running, v1.Failed},
		{v1.Succeeded, v1.Succeeded},
		{v1.Failed, v1.Failed},
	} {
		observed := v1.VirtualMachineInstanceStatus{Phase: c.observed, Reason: "r"}
		got := deletedEnd(observed)
		if got.Phase != c.want {
			t.Errorf("deletedEnd of %s: %s, want %s", c.observed, got.Phase, c.want)
		}
		if observed.Phase != c.observed {
			t.Errorf("deletedEnd changed the status it was given")
		}
		// Through desiredStatus, as report writes it: final.
		if w := desiredStatus(v1.VirtualMachineInstanceStatus{Phase: v1.Scheduled}, got, "node01", syncResult{}, t0); w.Phase != v1.Failed && w.Phase != v1.Succeeded {
			t.Errorf("desiredStatus of deletedEnd(%s): phase %s, want final", c.observed, w.Phase)
		}
	}
}

func TestSameSyncFailure(t *testing.T) {
	a := v1.VirtualMachineInstanceStatus{Conditions: []v1.VirtualMachineInstanceCondition{syncFailed("x", t0)}}
	b := v1.VirtualMachineInstanceStatus{Conditions: []v1.VirtualMachineInstanceCondition{syncFailed("x", t1)}}
	c := v1.VirtualMachineInstanceStatus{Conditions: []v1.VirtualMachineInstanceCondition{syncFailed("y", t0)}}
	none := v1.VirtualMachineInstanceStatus{Conditions: []v1.VirtualMachineInstanceCondition{readyTrue(t0)}}
	for _, tc := range []struct {
		a, b v1.VirtualMachineInstanceStatus
		want bool
	}{{a, b, true}, {a, c, false}, {a, none, false}, {none, none, true}} {
		if got := sameSyncFailure(tc.a, tc.b); got != tc.want {
			t.Errorf("sameSyncFailure(%v, %v) = %v", tc.a.Conditions, tc.b.Conditions, got)
		}
	}
}
