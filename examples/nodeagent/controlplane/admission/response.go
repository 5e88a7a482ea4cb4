package admission

import (
	"encoding/json"
	"fmt"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// maxCauses is how many problems a refusal lists, as KubeVirt's
// ToAdmissionResponse (the rest are counted).
const maxCauses = 10

// refused is the answer to an object with problems, as KubeVirt's
// webhooks give it: 422 Invalid, each problem a cause (its field path, and
// what is wrong there), and the message every problem with its path,
// joined by ", ". The API server answers the request with it as `admission
// webhook "NAME" denied the request: MESSAGE`, the causes kept; kubectl
// prints the causes, one "* PATH: WHAT" line each.
func refused(errs field.ErrorList) admission.Response {
	shown := errs
	if len(shown) > maxCauses {
		shown = shown[:maxCauses]
	}
	causes := make([]metav1.StatusCause, len(shown))
	msg := ""
	for i, e := range shown {
		causes[i] = metav1.StatusCause{Type: metav1.CauseType(e.Type), Field: e.Field, Message: e.ErrorBody()}
		if i > 0 {
			msg += ", "
		}
		msg += e.Error()
	}
	if more := len(errs) - len(shown); more > 0 {
		msg += fmt.Sprintf(", and %d more validation errors", more)
	}
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
		Result: &metav1.Status{
			Status: metav1.StatusFailure, Message: msg, Reason: metav1.StatusReasonInvalid,
			Code: http.StatusUnprocessableEntity, Details: &metav1.StatusDetails{Causes: causes},
		},
	}}
}

// badRequest is the answer to a request the webhook cannot read.
func badRequest(err error) admission.Response {
	return admission.Errored(http.StatusBadRequest, err)
}

// patched is the answer that changes the object of req to obj (a JSON
// patch from what was sent to what obj is).
func patched(req admission.Request, obj any) admission.Response {
	data, err := json.Marshal(obj)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, data)
}
