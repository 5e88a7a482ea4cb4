package subresources

import (
	"net/http"
	"strings"
	"testing"

	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	v1 "kubevirt.io/api/core/v1"
)

// Each VMI subresource's checks, with virt-api's codes and messages.
func TestVMIChecks(t *testing.T) {
	vmi := func(phase v1.VirtualMachineInstancePhase, edit func(*v1.VirtualMachineInstance)) *v1.VirtualMachineInstance {
		v := &v1.VirtualMachineInstance{Status: v1.VirtualMachineInstanceStatus{Phase: phase}}
		v.Name = "tiny"
		if edit != nil {
			edit(v)
		}
		return v
	}
	with := func(typ v1.VirtualMachineInstanceConditionType, status k8sv1.ConditionStatus) func(*v1.VirtualMachineInstance) {
		return func(v *v1.VirtualMachineInstance) {
			v.Status.Conditions = append(v.Status.Conditions, v1.VirtualMachineInstanceCondition{Type: typ, Status: status})
		}
	}
	noSerial := func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.AutoattachSerialConsole = ptr.To(false) }
	noGraphics := func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.AutoattachGraphicsDevice = ptr.To(false) }
	noACPI := func(v *v1.VirtualMachineInstance) {
		v.Spec.Domain.Features = &v1.Features{ACPI: v1.FeatureState{Enabled: ptr.To(false)}}
	}
	probe := func(v *v1.VirtualMachineInstance) { v.Spec.LivenessProbe = &v1.Probe{} }
	cases := []struct {
		name  string
		check vmiCheck
		vmi   *v1.VirtualMachineInstance
		code  int // 0: allowed
		msg   string
	}{
		{"console of a running VMI", checkConsole, vmi(v1.Running, nil), 0, ""},
		{"console before it runs", checkConsole, vmi(v1.Scheduled, nil), http.StatusBadRequest, "VMI is not running"},
		{"console of a failed VMI", checkConsole, vmi(v1.Failed, nil), http.StatusConflict, "VMI is in failed status"},
		{"console of a VMI without one", checkConsole, vmi(v1.Running, noSerial), http.StatusBadRequest, "No serial consoles are present."},
		{"VNC of a running VMI", checkDisplay, vmi(v1.Running, nil), 0, ""},
		{"VNC before it runs", checkDisplay, vmi(v1.Pending, nil), http.StatusBadRequest, "VMI is not running"},
		{"VNC of a VMI without display", checkDisplay, vmi(v1.Running, noGraphics), http.StatusBadRequest, "No graphics devices are present."},
		{"pause", checkPause, vmi(v1.Running, nil), 0, ""},
		{"pause of a paused VMI", checkPause, vmi(v1.Running, with(v1.VirtualMachineInstancePaused, k8sv1.ConditionTrue)), http.StatusConflict, "VMI is already paused"},
		{"pause before it runs", checkPause, vmi(v1.Scheduled, nil), http.StatusConflict, "VM is not running"},
		{"pause with a liveness probe", checkPause, vmi(v1.Running, probe), http.StatusForbidden, "Pausing VMIs with a non-GuestAgentPing LivenessProbe is not supported"},
		{"unpause", checkUnpause, vmi(v1.Running, with(v1.VirtualMachineInstancePaused, k8sv1.ConditionTrue)), 0, ""},
		{"unpause of a VMI not paused", checkUnpause, vmi(v1.Running, nil), http.StatusConflict, "VMI is not paused"},
		{"unpause before it runs", checkUnpause, vmi(v1.Succeeded, nil), http.StatusConflict, "VMI is not running"},
		{"soft reboot", checkSoftReboot, vmi(v1.Running, nil), 0, ""},
		{"soft reboot of a paused VMI", checkSoftReboot, vmi(v1.Running, with(v1.VirtualMachineInstancePaused, k8sv1.ConditionTrue)), http.StatusConflict, "VMI is paused"},
		{"soft reboot without ACPI or agent", checkSoftReboot, vmi(v1.Running, noACPI), http.StatusConflict, "VMI neither have the agent connected nor the ACPI feature enabled"},
		{"soft reboot without ACPI, with the agent", checkSoftReboot, vmi(v1.Running, func(v *v1.VirtualMachineInstance) {
			noACPI(v)
			with(v1.VirtualMachineInstanceAgentConnected, k8sv1.ConditionTrue)(v)
		}), 0, ""},
		{"guest agent info without agent", checkGuestAgent, vmi(v1.Running, nil), http.StatusConflict, "VMI does not have guest agent connected"},
		{"guest agent info", checkGuestAgent, vmi(v1.Running, with(v1.VirtualMachineInstanceAgentConnected, k8sv1.ConditionTrue)), 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.check(c.vmi)
			switch {
			case c.code == 0 && err != nil:
				t.Fatalf("refused: %v", err)
			case c.code != 0 && (err == nil || int(err.Status().Code) != c.code || !strings.Contains(err.Error(), c.msg)):
				t.Fatalf("%v, want %d with %q", err, c.code, c.msg)
			}
		})
	}
	// A refusal on a VMI names it as virt-api names it.
	err := checkConsole(vmi(v1.Failed, nil))
	if got, want := err.Error(), `Operation cannot be fulfilled on virtualmachineinstance.kubevirt.io "tiny": VMI is in failed status`; got != want {
		t.Errorf("message %q, want %q", got, want)
	}
	if !apierrors.IsConflict(err) {
		t.Errorf("%v is not a conflict", err)
	}
}
