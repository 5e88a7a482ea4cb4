package subresources

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The VirtualMachine subresources: what virt-api's lifecycle handlers
// write, in their order, with their refusals. The VM controller (not this
// package) then acts on what they wrote: a runStrategy, or a start or stop
// request in status.stateChangeRequests.

// startVM is PUT virtualmachines/NAME/start: Halted becomes Always (or,
// for a paused start, a start request); Manual and RerunOnFailure get a
// start request (after a stop request of the ended VMI, whose restart it
// is); Always and Once refuse. 202 Accepted.
func (s *Server) startVM(w http.ResponseWriter, r *http.Request) {
	ctx, ns, name := r.Context(), r.PathValue("namespace"), r.PathValue("name")
	vm, serr := s.fetchVM(ctx, ns, name)
	if serr != nil {
		writeStatus(w, serr)
		return
	}
	vmi, serr := s.getVMI(ctx, ns, name)
	if serr != nil {
		writeStatus(w, serr)
		return
	}
	if vmi != nil && !vmi.IsFinal() && vmi.Status.Phase != v1.Unknown && vmi.Status.Phase != v1.VmPhaseUnset {
		writeStatus(w, vmConflict(name, "VM is already running"))
		return
	}
	if hasVMCondition(vm, v1.VirtualMachineManualRecoveryRequired) {
		writeStatus(w, vmConflict(name, msgManualRecoveryRequired))
		return
	}
	var opts v1.StartOptions
	if serr := decodeBody(r, &opts); serr != nil {
		writeStatus(w, serr)
		return
	}
	p, serr := startPatches(vm, vmi, opts.Paused)
	if serr != nil {
		writeStatus(w, serr)
		return
	}
	if serr := s.patchVM(ctx, vm, p, opts.DryRun); serr != nil {
		writeStatus(w, serr)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// vmPatches are the JSON patches a subresource makes to a VM: of its spec,
// of its status (the status subresource); either may be nil.
type vmPatches struct {
	spec, status []byte
}

// startPatches decides what start writes to vm, whose VMI is vmi (nil:
// none), per run strategy.
func startPatches(vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance, paused bool) (vmPatches, *apierrors.StatusError) {
	strategy, err := vm.RunStrategy()
	if err != nil {
		return vmPatches{}, apierrors.NewInternalError(err)
	}
	start := v1.VirtualMachineStateChangeRequest{Action: v1.StartRequest, Data: map[string]string{}}
	if paused {
		start.Data[v1.StartRequestDataPausedKey] = v1.StartRequestDataPausedTrue
	}
	var p vmPatches
	switch strategy {
	case v1.RunStrategyHalted:
		// A paused start is a start request, which the VM controller
		// turns into a run strategy. (virt-api also compares the
		// template's startStrategy to a fresh pointer, a comparison that
		// is always unequal: only paused decides.)
		if paused {
			p.status, err = stateChangePatch(vm, start)
		} else {
			p.spec, err = runningPatch(vm, true)
		}
	case v1.RunStrategyRerunOnFailure, v1.RunStrategyManual:
		switch {
		case strategy == v1.RunStrategyRerunOnFailure && vmi != nil && vmi.Status.Phase == v1.Failed:
			return vmPatches{}, vmConflict(vm.Name, fmt.Sprintf("%v does not support starting VM from failed state", v1.RunStrategyRerunOnFailure))
		case strategy == v1.RunStrategyRerunOnFailure && vmi != nil && vmi.Status.Phase == v1.Succeeded,
			strategy == v1.RunStrategyManual && vmi != nil && vmi.IsFinal():
			p.status, err = stateChangePatch(vm, v1.VirtualMachineStateChangeRequest{Action: v1.StopRequest, UID: &vmi.UID}, start)
		default:
			p.status, err = stateChangePatch(vm, start)
		}
	case v1.RunStrategyAlways, v1.RunStrategyOnce:
		return vmPatches{}, vmConflict(vm.Name, fmt.Sprintf("%v does not support manual start requests", strategy))
	}
	if err != nil {
		return vmPatches{}, apierrors.NewInternalError(err)
	}
	return p, nil
}

// stopVM is PUT virtualmachines/NAME/stop: with a grace period, the
// running VMI's terminationGracePeriodSeconds is set to it first; Always
// and Once become Halted; Manual and RerunOnFailure get a stop request of
// the VMI; Halted takes a stop request only to shorten the grace period of
// a VMI still running. 202 Accepted.
func (s *Server) stopVM(w http.ResponseWriter, r *http.Request) {
	ctx, ns, name := r.Context(), r.PathValue("namespace"), r.PathValue("name")
	var opts v1.StopOptions
	if serr := decodeBody(r, &opts); serr != nil {
		writeStatus(w, serr)
		return
	}
	vm, serr := s.fetchVM(ctx, ns, name)
	if serr != nil {
		writeStatus(w, serr)
		return
	}
	if _, err := vm.RunStrategy(); err != nil {
		writeStatus(w, apierrors.NewInternalError(err))
		return
	}
	vmi, serr := s.getVMI(ctx, ns, name)
	if serr != nil {
		writeStatus(w, serr)
		return
	}
	var oldGrace int64
	if vmi != nil && !vmi.IsFinal() && opts.GracePeriod != nil {
		var err error
		if oldGrace, err = s.patchGracePeriod(ctx, vmi, *opts.GracePeriod, opts.DryRun); err != nil {
			writeStatus(w, apierrors.NewInternalError(err))
			return
		}
	}
	p, serr := stopPatches(vm, vmi, opts.GracePeriod, oldGrace)
	if serr != nil {
		writeStatus(w, serr)
		return
	}
	if serr := s.patchVM(ctx, vm, p, opts.DryRun); serr != nil {
		writeStatus(w, serr)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// stopPatches decides what stop writes to vm, whose VMI is vmi (nil:
// none), with the grace period asked (nil: none) and the one the VMI had
// before stop set it (oldGrace).
func stopPatches(vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance, grace *int64, oldGrace int64) (vmPatches, *apierrors.StatusError) {
	strategy, err := vm.RunStrategy()
	if err != nil {
		return vmPatches{}, apierrors.NewInternalError(err)
	}
	running := vmi != nil && !vmi.IsFinal()
	var p vmPatches
	switch strategy {
	case v1.RunStrategyHalted:
		if !running {
			return vmPatches{}, vmConflict(vm.Name, msgVMNotRunning)
		}
		if grace == nil || (vmi.Spec.TerminationGracePeriodSeconds != nil && *grace >= oldGrace) {
			return vmPatches{}, vmConflict(vm.Name, fmt.Sprintf("%v only supports manual stop requests with a shorter graceperiod", v1.RunStrategyHalted))
		}
		p.status, err = stateChangePatch(vm, v1.VirtualMachineStateChangeRequest{Action: v1.StopRequest, UID: &vmi.UID})
	case v1.RunStrategyRerunOnFailure, v1.RunStrategyManual:
		if !running {
			return vmPatches{}, vmConflict(vm.Name, msgVMNotRunning)
		}
		p.status, err = stateChangePatch(vm, v1.VirtualMachineStateChangeRequest{Action: v1.StopRequest, UID: &vmi.UID})
	case v1.RunStrategyAlways, v1.RunStrategyOnce:
		p.spec, err = runningPatch(vm, false)
	}
	if err != nil {
		return vmPatches{}, apierrors.NewInternalError(err)
	}
	return p, nil
}

// restartVM is PUT virtualmachines/NAME/restart: a stop request of the
// VMI and a start request; with gracePeriodSeconds 0 (virtctl restart
// --force) the VMI's terminationGracePeriodSeconds is set to 1 first, and
// set back when the request cannot be written. Halted and Once refuse, so
// does a VM without VMI. 202 Accepted.
func (s *Server) restartVM(w http.ResponseWriter, r *http.Request) {
	ctx, ns, name := r.Context(), r.PathValue("namespace"), r.PathValue("name")
	var opts v1.RestartOptions
	if serr := decodeBody(r, &opts); serr != nil {
		writeStatus(w, serr)
		return
	}
	if g := opts.GracePeriodSeconds; g != nil && *g > 0 {
		writeStatus(w, apierrors.NewBadRequest("For force restart, only gracePeriod=0 is supported for now"))
		return
	} else if g != nil && *g < 0 {
		writeStatus(w, apierrors.NewBadRequest("gracePeriod has to be greater or equal to 0"))
		return
	}
	vm, serr := s.fetchVM(ctx, ns, name)
	if serr != nil {
		writeStatus(w, serr)
		return
	}
	if hasVMCondition(vm, v1.VirtualMachineConditionType(v1.VirtualMachineInstanceVolumesChange)) {
		writeStatus(w, vmConflict(name, msgManualRecoveryRequired))
		return
	}
	strategy, err := vm.RunStrategy()
	if err != nil {
		writeStatus(w, apierrors.NewInternalError(err))
		return
	}
	if strategy == v1.RunStrategyHalted || strategy == v1.RunStrategyOnce {
		writeStatus(w, vmConflict(name, fmt.Sprintf("RunStategy %v does not support manual restart requests", strategy)))
		return
	}
	vmi, serr := s.getVMI(ctx, ns, name)
	if serr != nil {
		writeStatus(w, serr)
		return
	}
	if vmi == nil {
		writeStatus(w, vmConflict(name, fmt.Sprintf("VM is not running: %v", v1.RunStrategyHalted)))
		return
	}
	force := opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds == 0
	var oldGrace int64
	if force {
		if oldGrace, err = s.patchGracePeriod(ctx, vmi, 1, opts.DryRun); err != nil {
			writeStatus(w, apierrors.NewInternalError(err))
			return
		}
		one := int64(1) // what the VMI now says, for the rollback's test
		vmi.Spec.TerminationGracePeriodSeconds = &one
	}
	status, err := stateChangePatch(vm,
		v1.VirtualMachineStateChangeRequest{Action: v1.StopRequest, UID: &vmi.UID},
		v1.VirtualMachineStateChangeRequest{Action: v1.StartRequest})
	if err != nil {
		writeStatus(w, apierrors.NewInternalError(err))
		return
	}
	if serr := s.patchVM(ctx, vm, vmPatches{status: status}, opts.DryRun); serr != nil {
		if force {
			if _, err := s.patchGracePeriod(ctx, vmi, oldGrace, opts.DryRun); err != nil {
				s.log.Error("subresources: cannot set the VMI's terminationGracePeriodSeconds back", "vmi", ns+"/"+name, "err", err)
			}
		}
		writeStatus(w, serr)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// migrateVM is PUT virtualmachines/NAME/migrate: a
// VirtualMachineInstanceMigration of the running VMI (generateName
// kubevirt-migrate-vm-), with the body's addedNodeSelector. 202 Accepted.
// The control plane's migration controller and the node agents carry it
// out (package controlplane/migration). Where KubeVirt's VirtualMachineInstanceMigration CRD is not installed, the
// create fails as on such a cluster, and the answer is virt-api's for a
// failed create: 500, "the server could not find the requested resource".
func (s *Server) migrateVM(w http.ResponseWriter, r *http.Request) {
	ctx, ns, name := r.Context(), r.PathValue("namespace"), r.PathValue("name")
	var opts v1.MigrateOptions
	if serr := decodeBody(r, &opts); serr != nil {
		writeStatus(w, serr)
		return
	}
	if _, serr := s.fetchVM(ctx, ns, name); serr != nil {
		writeStatus(w, serr)
		return
	}
	vmi, serr := s.fetchVMI(ctx, ns, name)
	if serr != nil {
		writeStatus(w, serr)
		return
	}
	if vmi.Status.Phase != v1.Running {
		writeStatus(w, vmConflict(name, msgVMNotRunning))
		return
	}
	migration := &v1.VirtualMachineInstanceMigration{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "kubevirt-migrate-vm-", Namespace: ns},
		Spec:       v1.VirtualMachineInstanceMigrationSpec{VMIName: name, AddedNodeSelector: opts.AddedNodeSelector},
	}
	if err := s.kube.Create(ctx, migration, &client.CreateOptions{DryRun: opts.DryRun}); err != nil {
		writeStatus(w, apierrors.NewInternalError(err))
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// patchVM applies p to vm: its spec patch to the object, its status patch
// to the status subresource. A failed test (the VM changed since it was
// read) is a conflict, any other failure internal, as virt-api answers.
func (s *Server) patchVM(ctx context.Context, vm *v1.VirtualMachine, p vmPatches, dryRun []string) *apierrors.StatusError {
	opts := &client.PatchOptions{DryRun: dryRun}
	var err error
	switch {
	case p.spec != nil:
		err = s.kube.Patch(ctx, vm, client.RawPatch(types.JSONPatchType, p.spec), opts)
	case p.status != nil:
		err = s.kube.Status().Patch(ctx, vm, client.RawPatch(types.JSONPatchType, p.status), &client.SubResourcePatchOptions{PatchOptions: *opts})
	}
	switch {
	case err == nil:
		return nil
	case strings.Contains(err.Error(), msgTestFailed):
		return apierrors.NewConflict(v1.Resource("virtualmachine"), vm.Name, err)
	default:
		return apierrors.NewInternalError(err)
	}
}

// patchGracePeriod sets the VMI's terminationGracePeriodSeconds to grace
// (gracePeriodPatch) and returns the value it had.
func (s *Server) patchGracePeriod(ctx context.Context, vmi *v1.VirtualMachineInstance, grace int64, dryRun []string) (int64, error) {
	patch, old, err := gracePeriodPatch(vmi, grace)
	if err != nil {
		return 0, err
	}
	target := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Namespace: vmi.Namespace, Name: vmi.Name}}
	return old, s.kube.Patch(ctx, target, client.RawPatch(types.JSONPatchType, patch), &client.PatchOptions{DryRun: dryRun})
}

// fetchVM reads a VM: 404 when there is none, 500 when it cannot be read.
func (s *Server) fetchVM(ctx context.Context, ns, name string) (*v1.VirtualMachine, *apierrors.StatusError) {
	var vm v1.VirtualMachine
	if err := s.kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &vm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, apierrors.NewNotFound(v1.Resource("virtualmachine"), name)
		}
		return nil, apierrors.NewInternalError(fmt.Errorf("unable to retrieve vm [%s]: %v", name, err))
	}
	return &vm, nil
}

// fetchVMI reads a VMI: 404 when there is none, 500 when it cannot be read.
func (s *Server) fetchVMI(ctx context.Context, ns, name string) (*v1.VirtualMachineInstance, *apierrors.StatusError) {
	var vmi v1.VirtualMachineInstance
	if err := s.kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &vmi); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, apierrors.NewNotFound(v1.Resource("virtualmachineinstance"), name)
		}
		return nil, apierrors.NewInternalError(fmt.Errorf("unable to retrieve vmi [%s]: %v", name, err))
	}
	return &vmi, nil
}

// getVMI reads the VMI of a VM: nil when it has none, 500 when it cannot
// be read.
func (s *Server) getVMI(ctx context.Context, ns, name string) (*v1.VirtualMachineInstance, *apierrors.StatusError) {
	var vmi v1.VirtualMachineInstance
	err := s.kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &vmi)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, apierrors.NewInternalError(err)
	}
	return &vmi, nil
}

// hasVMCondition tells whether vm has condition typ with status True.
func hasVMCondition(vm *v1.VirtualMachine, typ v1.VirtualMachineConditionType) bool {
	for _, c := range vm.Status.Conditions {
		if c.Type == typ && c.Status == k8sv1.ConditionTrue {
			return true
		}
	}
	return false
}
