package vm

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	v1 "kubevirt.io/api/core/v1"
)

// TestSyncRestartRequired: a template different from the running VMI's
// revision asks for a restart, an equal one (or one whose only change is
// the VMI's own firmware UUID written in) does not, and clears the
// condition.
func TestSyncRestartRequired(t *testing.T) {
	template := func(mem string) *v1.VirtualMachineInstanceTemplateSpec {
		q := resource.MustParse(mem)
		return &v1.VirtualMachineInstanceTemplateSpec{Spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{Memory: &v1.Memory{Guest: &q}}}}
	}
	last := &v1.VirtualMachineSpec{Template: template("64Mi")}
	vm := vmWith(v1.RunStrategyAlways, v1.RunStrategyAlways)
	vm.Spec.Template = template("96Mi")
	vmi := vmiIn(v1.Running, false)
	if !syncRestartRequired(last, vm, vmi, now) {
		t.Fatal("a new memory size: no restart required")
	}
	if c := vm.Status.Conditions; len(c) != 1 || c[0].Type != v1.VirtualMachineRestartRequired || c[0].Message != restartRequiredMessage {
		t.Errorf("conditions %+v, want RestartRequired", c)
	}
	if syncRestartRequired(nil, vm, nil, now) || len(vm.Status.Conditions) != 1 {
		t.Error("without a revision: decided, or the condition went")
	}
	vm.Spec.Template = template("64Mi")
	vm.Spec.Template.Spec.Domain.Firmware = &v1.Firmware{UUID: "fw-uuid"}
	vmi.Spec.Domain.Firmware = &v1.Firmware{UUID: "fw-uuid"}
	if syncRestartRequired(last, vm, vmi, now) || len(vm.Status.Conditions) != 0 {
		t.Errorf("the VMI's own UUID written into the template: restart required, conditions %+v", vm.Status.Conditions)
	}
	vmi.Spec.Domain.Firmware.UUID = "another"
	if !syncRestartRequired(last, vm, vmi, now) {
		t.Error("a firmware UUID the VMI does not have: no restart required")
	}
}
