package subresources

import (
	"encoding/json"
	"errors"

	"k8s.io/apimachinery/pkg/api/equality"
	v1 "kubevirt.io/api/core/v1"
)

// patchOp is one JSON Patch operation (RFC 6902) as KubeVirt's patch
// package writes it: a remove has no value, the others always have one
// (null included).
type patchOp struct {
	Op    string
	Path  string
	Value any
}

// MarshalJSON writes the operation.
func (o patchOp) MarshalJSON() ([]byte, error) {
	if o.Op == "remove" {
		return json.Marshal(struct {
			Op   string `json:"op"`
			Path string `json:"path"`
		}{o.Op, o.Path})
	}
	return json.Marshal(struct {
		Op    string `json:"op"`
		Path  string `json:"path"`
		Value any    `json:"value"`
	}{o.Op, o.Path, o.Value})
}

func test(path string, v any) patchOp    { return patchOp{"test", path, v} }
func add(path string, v any) patchOp     { return patchOp{"add", path, v} }
func replace(path string, v any) patchOp { return patchOp{"replace", path, v} }
func remove(path string) patchOp         { return patchOp{Op: "remove", Path: path} }

// errChangeUnderway is stateChangePatch's refusal, virt-api's message.
var errChangeUnderway = errors.New("unable to complete request: stop/start already underway")

// stateChangePatch is the JSON patch of vm's status that asks the VM
// controller for changes (start, stop with the VMI's UID), as virt-api's
// getChangeRequestJson writes it: a VM without status gets one; otherwise
// the requests it holds are tested (optimistic concurrency: a patch
// computed from a stale copy is refused with a conflict) and the changes
// added when it holds none, or a lone stop replaces them; anything else is
// errChangeUnderway. A recorded start failure is removed.
func stateChangePatch(vm *v1.VirtualMachine, changes ...v1.VirtualMachineStateChangeRequest) ([]byte, error) {
	var ops []patchOp
	if equality.Semantic.DeepEqual(vm.Status, v1.VirtualMachineStatus{}) {
		ops = append(ops, add("/status", v1.VirtualMachineStatus{StateChangeRequests: changes}))
	} else {
		ops = append(ops, test("/status/stateChangeRequests", vm.Status.StateChangeRequests))
		switch {
		case len(vm.Status.StateChangeRequests) == 0:
			ops = append(ops, add("/status/stateChangeRequests", changes))
		case len(changes) == 1 && changes[0].Action == v1.StopRequest:
			ops = append(ops, replace("/status/stateChangeRequests", changes))
		default:
			return nil, errChangeUnderway
		}
	}
	if vm.Status.StartFailure != nil {
		ops = append(ops, remove("/status/startFailure"))
	}
	return json.Marshal(ops)
}

// runningPatch is the JSON patch of vm's spec that makes it run (runStrategy
// Always) or not (Halted), as virt-api's getRunningPatch writes it: the
// field the VM uses, runStrategy or the legacy running, tested and replaced.
func runningPatch(vm *v1.VirtualMachine, running bool) ([]byte, error) {
	if vm.Spec.RunStrategy != nil {
		strategy := v1.RunStrategyHalted
		if running {
			strategy = v1.RunStrategyAlways
		}
		return json.Marshal([]patchOp{test("/spec/runStrategy", vm.Spec.RunStrategy), replace("/spec/runStrategy", strategy)})
	}
	return json.Marshal([]patchOp{test("/spec/running", vm.Spec.Running), replace("/spec/running", running)})
}

// gracePeriodPatch is the JSON patch of vmi's spec that sets its
// terminationGracePeriodSeconds to grace, testing the value it has (null
// when unset), as virt-api's patchVMITerminationGracePeriod writes it; old
// is the value it had (0 when unset).
func gracePeriodPatch(vmi *v1.VirtualMachineInstance, grace int64) (patch []byte, old int64, err error) {
	var was any
	if p := vmi.Spec.TerminationGracePeriodSeconds; p != nil {
		old, was = *p, *p
	}
	patch, err = json.Marshal([]patchOp{
		test("/spec/terminationGracePeriodSeconds", was),
		replace("/spec/terminationGracePeriodSeconds", grace),
	})
	return patch, old, err
}
