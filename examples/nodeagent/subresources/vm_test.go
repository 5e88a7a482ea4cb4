package subresources

import (
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	v1 "kubevirt.io/api/core/v1"
)

// vmWith is a VM named vm with the run strategy (empty: none) and no
// status.
func vmWith(strategy v1.VirtualMachineRunStrategy) *v1.VirtualMachine {
	vm := &v1.VirtualMachine{}
	vm.Name = "vm"
	if strategy != "" {
		vm.Spec.RunStrategy = &strategy
	}
	return vm
}

// vmiIn is the VM's VMI in phase.
func vmiIn(phase v1.VirtualMachineInstancePhase) *v1.VirtualMachineInstance {
	vmi := &v1.VirtualMachineInstance{Status: v1.VirtualMachineInstanceStatus{Phase: phase}}
	vmi.Name, vmi.UID = "vm", types.UID("uid-1")
	return vmi
}

// What start writes, per run strategy and VMI, as virt-api's
// StartVMRequestHandler decides it.
func TestStartPatches(t *testing.T) {
	cases := []struct {
		name     string
		strategy v1.VirtualMachineRunStrategy
		vmi      *v1.VirtualMachineInstance
		paused   bool
		spec     string
		status   string
		code     int
		msg      string
	}{
		{name: "Halted runs", strategy: v1.RunStrategyHalted,
			spec: `[{"op":"test","path":"/spec/runStrategy","value":"Halted"},{"op":"replace","path":"/spec/runStrategy","value":"Always"}]`},
		{name: "no strategy is Halted: running set", strategy: "",
			spec: `[{"op":"test","path":"/spec/running","value":null},{"op":"replace","path":"/spec/running","value":true}]`},
		{name: "Halted paused: a start request", strategy: v1.RunStrategyHalted, paused: true,
			status: `[{"op":"add","path":"/status","value":{"stateChangeRequests":[{"action":"Start","data":{"paused":"true"}}]}}]`},
		{name: "Manual: a start request", strategy: v1.RunStrategyManual,
			status: `[{"op":"add","path":"/status","value":{"stateChangeRequests":[{"action":"Start"}]}}]`},
		{name: "Manual with an ended VMI: stop it, then start", strategy: v1.RunStrategyManual, vmi: vmiIn(v1.Failed),
			status: `[{"op":"add","path":"/status","value":{"stateChangeRequests":[{"action":"Stop","uid":"uid-1"},{"action":"Start"}]}}]`},
		{name: "RerunOnFailure after success: stop, then start", strategy: v1.RunStrategyRerunOnFailure, vmi: vmiIn(v1.Succeeded),
			status: `[{"op":"add","path":"/status","value":{"stateChangeRequests":[{"action":"Stop","uid":"uid-1"},{"action":"Start"}]}}]`},
		{name: "RerunOnFailure after a failure", strategy: v1.RunStrategyRerunOnFailure, vmi: vmiIn(v1.Failed),
			code: http.StatusConflict, msg: "RerunOnFailure does not support starting VM from failed state"},
		{name: "Always", strategy: v1.RunStrategyAlways, code: http.StatusConflict, msg: "Always does not support manual start requests"},
		{name: "Once", strategy: v1.RunStrategyOnce, code: http.StatusConflict, msg: "Once does not support manual start requests"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, serr := startPatches(vmWith(c.strategy), c.vmi, c.paused)
			checkPatches(t, p, serr, c.spec, c.status, c.code, c.msg)
		})
	}
}

// What stop writes, as virt-api's StopVMRequestHandler decides it (after
// it set a running VMI's grace period to the one asked).
func TestStopPatches(t *testing.T) {
	withGrace := func(phase v1.VirtualMachineInstancePhase, grace int64) *v1.VirtualMachineInstance {
		vmi := vmiIn(phase)
		vmi.Spec.TerminationGracePeriodSeconds = &grace
		return vmi
	}
	stopRequest := `[{"op":"add","path":"/status","value":{"stateChangeRequests":[{"action":"Stop","uid":"uid-1"}]}}]`
	cases := []struct {
		name     string
		strategy v1.VirtualMachineRunStrategy
		vmi      *v1.VirtualMachineInstance
		grace    *int64
		oldGrace int64
		spec     string
		status   string
		code     int
		msg      string
	}{
		{name: "Always halts", strategy: v1.RunStrategyAlways,
			spec: `[{"op":"test","path":"/spec/runStrategy","value":"Always"},{"op":"replace","path":"/spec/runStrategy","value":"Halted"}]`},
		{name: "Once halts", strategy: v1.RunStrategyOnce, vmi: vmiIn(v1.Running),
			spec: `[{"op":"test","path":"/spec/runStrategy","value":"Once"},{"op":"replace","path":"/spec/runStrategy","value":"Halted"}]`},
		{name: "Manual running: a stop request", strategy: v1.RunStrategyManual, vmi: vmiIn(v1.Running), status: stopRequest},
		{name: "RerunOnFailure running: a stop request", strategy: v1.RunStrategyRerunOnFailure, vmi: vmiIn(v1.Scheduled), status: stopRequest},
		{name: "Manual without VMI", strategy: v1.RunStrategyManual, code: http.StatusConflict, msg: "VM is not running"},
		{name: "Manual with an ended VMI", strategy: v1.RunStrategyManual, vmi: vmiIn(v1.Succeeded), code: http.StatusConflict, msg: "VM is not running"},
		{name: "Halted without VMI", strategy: v1.RunStrategyHalted, code: http.StatusConflict, msg: "VM is not running"},
		{name: "Halted, still running, no grace period", strategy: v1.RunStrategyHalted, vmi: withGrace(v1.Running, 30),
			code: http.StatusConflict, msg: "Halted only supports manual stop requests with a shorter graceperiod"},
		{name: "Halted, still running, a longer grace period", strategy: v1.RunStrategyHalted, vmi: withGrace(v1.Running, 40), grace: ptr.To[int64](40), oldGrace: 30,
			code: http.StatusConflict, msg: "Halted only supports manual stop requests with a shorter graceperiod"},
		{name: "Halted, still running, a shorter grace period: a stop request", strategy: v1.RunStrategyHalted, vmi: withGrace(v1.Running, 0), grace: ptr.To[int64](0), oldGrace: 30,
			status: stopRequest},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, serr := stopPatches(vmWith(c.strategy), c.vmi, c.grace, c.oldGrace)
			checkPatches(t, p, serr, c.spec, c.status, c.code, c.msg)
		})
	}
}

// checkPatches compares a decision with the patches or the refusal
// wanted.
func checkPatches(t *testing.T, p vmPatches, serr *apierrors.StatusError, spec, status string, code int, msg string) {
	t.Helper()
	if code != 0 {
		if serr == nil || int(serr.Status().Code) != code || !strings.Contains(serr.Error(), msg) {
			t.Fatalf("refusal %v, want %d with %q", serr, code, msg)
		}
		return
	}
	if serr != nil {
		t.Fatal(serr)
	}
	if string(p.spec) != spec || string(p.status) != status {
		t.Errorf("patches\nspec   %s\nstatus %s\nwant\nspec   %s\nstatus %s", p.spec, p.status, spec, status)
	}
}
