package subresources

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	v1 "kubevirt.io/api/core/v1"
)

// The patches, byte for byte as KubeVirt's patch package writes virt-api's
// (pkg/apimachinery/patch: a remove without value, a test of an unset
// field with null).
func TestPatches(t *testing.T) {
	uid := types.UID("uid-1")
	start := v1.VirtualMachineStateChangeRequest{Action: v1.StartRequest}
	stop := v1.VirtualMachineStateChangeRequest{Action: v1.StopRequest, UID: &uid}
	withStatus := func(s v1.VirtualMachineStatus) *v1.VirtualMachine { return &v1.VirtualMachine{Status: s} }
	cases := []struct {
		name string
		got  func() ([]byte, error)
		want string
	}{
		{"a VM without status gets one", func() ([]byte, error) { return stateChangePatch(&v1.VirtualMachine{}, start) },
			`[{"op":"add","path":"/status","value":{"stateChangeRequests":[{"action":"Start"}]}}]`},
		{"no requests: tested null, added", func() ([]byte, error) {
			return stateChangePatch(withStatus(v1.VirtualMachineStatus{Created: true}), stop, start)
		},
			`[{"op":"test","path":"/status/stateChangeRequests","value":null},{"op":"add","path":"/status/stateChangeRequests","value":[{"action":"Stop","uid":"uid-1"},{"action":"Start"}]}]`},
		{"a lone stop replaces the requests", func() ([]byte, error) {
			return stateChangePatch(withStatus(v1.VirtualMachineStatus{StateChangeRequests: []v1.VirtualMachineStateChangeRequest{start}}), stop)
		}, `[{"op":"test","path":"/status/stateChangeRequests","value":[{"action":"Start"}]},{"op":"replace","path":"/status/stateChangeRequests","value":[{"action":"Stop","uid":"uid-1"}]}]`},
		{"a start failure is removed", func() ([]byte, error) {
			return stateChangePatch(withStatus(v1.VirtualMachineStatus{StartFailure: &v1.VirtualMachineStartFailure{ConsecutiveFailCount: 2}}), start)
		}, `[{"op":"test","path":"/status/stateChangeRequests","value":null},{"op":"add","path":"/status/stateChangeRequests","value":[{"action":"Start"}]},{"op":"remove","path":"/status/startFailure"}]`},
		{"runStrategy", func() ([]byte, error) {
			return runningPatch(&v1.VirtualMachine{Spec: v1.VirtualMachineSpec{RunStrategy: ptr.To(v1.RunStrategyHalted)}}, true)
		}, `[{"op":"test","path":"/spec/runStrategy","value":"Halted"},{"op":"replace","path":"/spec/runStrategy","value":"Always"}]`},
		{"the legacy running", func() ([]byte, error) {
			return runningPatch(&v1.VirtualMachine{Spec: v1.VirtualMachineSpec{Running: ptr.To(true)}}, false)
		}, `[{"op":"test","path":"/spec/running","value":true},{"op":"replace","path":"/spec/running","value":false}]`},
		{"grace period set", func() ([]byte, error) {
			p, old, err := gracePeriodPatch(&v1.VirtualMachineInstance{Spec: v1.VirtualMachineInstanceSpec{TerminationGracePeriodSeconds: ptr.To[int64](30)}}, 1)
			if old != 30 {
				t.Errorf("old grace period %d, want 30", old)
			}
			return p, err
		}, `[{"op":"test","path":"/spec/terminationGracePeriodSeconds","value":30},{"op":"replace","path":"/spec/terminationGracePeriodSeconds","value":1}]`},
		{"grace period unset", func() ([]byte, error) {
			p, _, err := gracePeriodPatch(&v1.VirtualMachineInstance{}, 0)
			return p, err
		}, `[{"op":"test","path":"/spec/terminationGracePeriodSeconds","value":null},{"op":"replace","path":"/spec/terminationGracePeriodSeconds","value":0}]`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.got()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("patch\n%s\nwant\n%s", got, c.want)
			}
		})
	}
	_, err := stateChangePatch(withStatus(v1.VirtualMachineStatus{StateChangeRequests: []v1.VirtualMachineStateChangeRequest{start}}), start)
	if err != errChangeUnderway {
		t.Errorf("a start while a request waits: %v, want %v", err, errChangeUnderway)
	}
}
