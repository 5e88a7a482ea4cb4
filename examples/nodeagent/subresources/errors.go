package subresources

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/yaml"
	v1 "kubevirt.io/api/core/v1"
)

// The messages of virt-api's refusals.
const (
	msgVMNotRunning           = "VM is not running"
	msgVMINotRunning          = "VMI is not running"
	msgVMINotPaused           = "VMI is not paused"
	msgVMIGuestAgent          = "VMI does not have guest agent connected"
	msgVMSnapshotInProgress   = "VM snapshot is in progress"
	msgPauseLivenessProbe     = "Pausing VMIs with a non-GuestAgentPing LivenessProbe is not supported"
	msgNoWebsocket            = "Can't connect to websocket"
	msgManualRecoveryRequired = "VM recovery required: Volume migration failed, leaving some volumes pointing to non-consistent targets; manual intervention is needed to reassign them to their original volumes."
	// msgTestFailed is how the API server says that a JSON patch's test
	// failed (the object changed since it was read): virt-api answers it
	// with a conflict.
	msgTestFailed = "jsonpatch test operation does not apply"
)

// vmConflict and vmiConflict are virt-api's 409 on a VM or a VMI (group
// kubevirt.io, kinds virtualmachine and virtualmachineinstance, as its
// v1.Resource names them).
func vmConflict(name, msg string) *apierrors.StatusError {
	return apierrors.NewConflict(v1.Resource("virtualmachine"), name, fmt.Errorf("%s", msg))
}

func vmiConflict(name, msg string) *apierrors.StatusError {
	return apierrors.NewConflict(v1.Resource("virtualmachineinstance"), name, fmt.Errorf("%s", msg))
}

// writeStatus answers with err as a Kubernetes Status object (kind Status,
// apiVersion v1) and its code, as virt-api's writeError does.
func writeStatus(w http.ResponseWriter, err *apierrors.StatusError) {
	st := err.ErrStatus.DeepCopy()
	st.Kind, st.APIVersion = "Status", "v1"
	writeJSON(w, int(err.Status().Code), st)
}

// writeText answers with status and msg as plain text, as virt-api's
// WriteErrorString and WriteError do for its authorization refusals and
// the guest agent's subresources.
func writeText(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, msg)
}

// writeJSON answers with status and v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	_ = enc.Encode(v)
}

// decodeBody decodes a request's optional body (JSON or YAML) into v, as
// virt-api does: no body is no error; a body that does not decode is 400.
func decodeBody(r *http.Request, v any) *apierrors.StatusError {
	if r.Body == nil {
		return nil
	}
	err := yaml.NewYAMLOrJSONDecoder(r.Body, 1024).Decode(v)
	if err == nil || err == io.EOF {
		return nil
	}
	return apierrors.NewBadRequest(fmt.Sprintf("Can not unmarshal Request body to struct, error: %s", err))
}
