package subresources

import (
	"context"
	"fmt"
	"net/http"

	k8sv1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
)

// The VirtualMachineInstance subresources that act on the guest: each is
// checked against the VMI object as virt-api checks it, then sent to the
// node agent of the VMI's node (package nodeapi), which calls its
// launcher.

// vmiCheck refuses a request for a VMI in a state it cannot serve; nil
// allows it.
type vmiCheck func(*v1.VirtualMachineInstance) *apierrors.StatusError

// checkPause allows pausing a running VMI that is not paused, and without
// a liveness probe other than the guest agent's ping.
func checkPause(vmi *v1.VirtualMachineInstance) *apierrors.StatusError {
	switch {
	case vmi.Status.Phase != v1.Running:
		return vmiConflict(vmi.Name, msgVMNotRunning)
	case vmi.Spec.LivenessProbe != nil && vmi.Spec.LivenessProbe.GuestAgentPing == nil:
		return apierrors.NewForbidden(v1.Resource("virtualmachineinstance"), vmi.Name, fmt.Errorf("%s", msgPauseLivenessProbe))
	case hasVMICondition(vmi, v1.VirtualMachineInstancePaused, ""):
		return vmiConflict(vmi.Name, "VMI is already paused")
	}
	return nil
}

// checkUnpause allows unpausing a running VMI that is paused.
func checkUnpause(vmi *v1.VirtualMachineInstance) *apierrors.StatusError {
	switch {
	case vmi.Status.Phase != v1.Running:
		return vmiConflict(vmi.Name, msgVMINotRunning)
	case !hasVMICondition(vmi, v1.VirtualMachineInstancePaused, ""):
		return vmiConflict(vmi.Name, msgVMINotPaused)
	}
	return nil
}

// checkSoftReboot allows a soft reboot of a running VMI that is not paused
// and has its guest agent connected or ACPI not turned off.
func checkSoftReboot(vmi *v1.VirtualMachineInstance) *apierrors.StatusError {
	switch {
	case vmi.Status.Phase != v1.Running:
		return vmiConflict(vmi.Name, msgVMNotRunning)
	case hasVMICondition(vmi, v1.VirtualMachineInstancePaused, k8sv1.ConditionTrue):
		return vmiConflict(vmi.Name, "VMI is paused")
	case !hasVMICondition(vmi, v1.VirtualMachineInstanceAgentConnected, ""):
		if f := vmi.Spec.Domain.Features; f != nil && f.ACPI.Enabled != nil && !*f.ACPI.Enabled {
			return vmiConflict(vmi.Name, "VMI neither have the agent connected nor the ACPI feature enabled")
		}
	}
	return nil
}

// checkGuestAgent allows the guest agent's subresources of a running VMI
// whose agent is connected.
func checkGuestAgent(vmi *v1.VirtualMachineInstance) *apierrors.StatusError {
	switch {
	case vmi.Status.Phase != v1.Running:
		return vmiConflict(vmi.Name, msgVMINotRunning)
	case !hasVMICondition(vmi, v1.VirtualMachineInstanceAgentConnected, ""):
		return vmiConflict(vmi.Name, msgVMIGuestAgent)
	}
	return nil
}

// vmiAction is a PUT subresource of VMIs that the VMI's node agent
// carries out: its operation, the checks of its VMI, whether its body may
// ask for a dry run (pause, unpause), whether the VM of the same name must
// not be being snapshotted (unpause).
type vmiAction struct {
	op             string
	check          vmiCheck
	dryRunBody     bool
	notSnapshotted bool
}

// vmiActions are the PUT subresources of VMIs, as virt-api checks them.
var vmiActions = []vmiAction{
	{op: nodeapi.Pause, check: checkPause, dryRunBody: true},
	{op: nodeapi.Unpause, check: checkUnpause, dryRunBody: true, notSnapshotted: true},
	{op: nodeapi.SoftReboot, check: checkSoftReboot},
}

// act serves PUT virtualmachineinstances/NAME/OP of a: the VMI read and
// checked, then the operation sent to its node's agent; 200 once the agent
// has done it. A body that asks for a dry run (dryRun ["All"]) stops after
// the checks. Refusals are Status objects: the checks', 400 when the VMI's
// agent cannot be found, 500 when it fails.
func (s *Server) act(a vmiAction) http.HandlerFunc {
	op := a.op
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, ns, name := r.Context(), r.PathValue("namespace"), r.PathValue("name")
		if a.notSnapshotted {
			vm, serr := s.fetchVM(ctx, ns, name)
			switch {
			case serr != nil && !apierrors.IsNotFound(serr):
				writeStatus(w, serr)
				return
			case serr == nil && vm.Status.SnapshotInProgress != nil:
				writeStatus(w, vmConflict(name, msgVMSnapshotInProgress))
				return
			}
		}
		dryRun := false
		if a.dryRunBody {
			// PauseOptions and UnpauseOptions have the same dryRun.
			var opts v1.PauseOptions
			if serr := decodeBody(r, &opts); serr != nil {
				writeStatus(w, serr)
				return
			}
			dryRun = len(opts.DryRun) > 0 && opts.DryRun[0] == metav1.DryRunAll
		}
		vmi, serr := s.fetchVMI(ctx, ns, name)
		if serr == nil {
			serr = a.check(vmi)
		}
		var addr string
		if serr == nil {
			addr, serr = s.agentOf(ctx, vmi)
		}
		if serr != nil {
			writeStatus(w, serr)
			return
		}
		if dryRun {
			return
		}
		if err := s.agents.Put(ctx, addr, ns, name, op); err != nil {
			writeStatus(w, apierrors.NewInternalError(err))
			return
		}
		s.log.Info("subresources: "+op, "vmi", ns+"/"+name, "node", vmi.Status.NodeName)
	}
}

// get serves GET virtualmachineinstances/NAME/OP (guestosinfo, userlist,
// filesystemlist): the VMI read and checked, op asked of its node's agent,
// its answer decoded into a fresh value of newValue and written as JSON.
// Every refusal is 500 with the error as plain text, as virt-api answers
// these.
func (s *Server) get(op string, newValue func() any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, ns, name := r.Context(), r.PathValue("namespace"), r.PathValue("name")
		vmi, serr := s.fetchVMI(ctx, ns, name)
		if serr == nil {
			serr = checkGuestAgent(vmi)
		}
		var addr string
		if serr == nil {
			addr, serr = s.agentOf(ctx, vmi)
		}
		if serr != nil {
			writeText(w, http.StatusInternalServerError, serr.Error())
			return
		}
		v := newValue()
		if err := s.agents.Get(ctx, addr, ns, name, op, v); err != nil {
			writeText(w, http.StatusInternalServerError, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, v)
	}
}

// agentOf finds the address of the node agent of the VMI's node
// (status.nodeName), from the Node's nodeapi.AddressAnnotation; a VMI that
// is neither running nor scheduled, or whose node has no agent serving
// the API, is 400, as virt-api answers when it finds no virt-handler.
func (s *Server) agentOf(ctx context.Context, vmi *v1.VirtualMachineInstance) (string, *apierrors.StatusError) {
	if !vmi.IsRunning() && !vmi.IsScheduled() {
		return "", apierrors.NewBadRequest(fmt.Sprintf("Unable to connect to VirtualMachineInstance because phase is %s instead of %s or %s", vmi.Status.Phase, v1.Running, v1.Scheduled))
	}
	var node k8sv1.Node
	if err := s.kube.Get(ctx, clientKey("", vmi.Status.NodeName), &node); err != nil {
		if apierrors.IsNotFound(err) {
			return "", apierrors.NewBadRequest(fmt.Sprintf("No node agent on node %s found: the node has no Node object", vmi.Status.NodeName))
		}
		return "", apierrors.NewBadRequest(err.Error())
	}
	addr, err := nodeapi.AddressOf(&node)
	if err != nil {
		return "", apierrors.NewBadRequest(err.Error())
	}
	return addr, nil
}

// hasVMICondition tells whether vmi has condition typ, with status
// (empty: any status).
func hasVMICondition(vmi *v1.VirtualMachineInstance, typ v1.VirtualMachineInstanceConditionType, status k8sv1.ConditionStatus) bool {
	for _, c := range vmi.Status.Conditions {
		if c.Type == typ && (status == "" || c.Status == status) {
			return true
		}
	}
	return false
}
