package admission

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	v1 "kubevirt.io/api/core/v1"
)

// The paths the webhooks are served at, KubeVirt's virt-api's.
const (
	VMIMutatePath         = "/virtualmachineinstances-mutate"
	VMICreateValidatePath = "/virtualmachineinstances-validate-create"
	VMIUpdateValidatePath = "/virtualmachineinstances-validate-update"
	VMMutatePath          = "/virtualmachines-mutate"
	VMValidatePath        = "/virtualmachines-validate"
)

// The names of the two webhook configurations, KubeVirt's.
const (
	MutatingConfigurationName   = "virt-api-mutator"
	ValidatingConfigurationName = "virt-api-validator"
)

// timeoutSeconds is KubeVirt's timeout of each webhook.
const timeoutSeconds = 10

// webhook is one webhook of the configurations: its name, the operations
// and resource it takes, and its path.
type webhook struct {
	name       string
	operations []admissionregistrationv1.OperationType
	resource   string
	path       string
}

const (
	create = admissionregistrationv1.Create
	update = admissionregistrationv1.Update
)

// mutating and validating are the webhooks of the two configurations, as
// KubeVirt v1.8.0's operator installs them for VMs and VMIs
// (pkg/virt-operator/resource/generate/components/webhooks.go), but for
// the VMI mutator, which takes creations only: KubeVirt's also takes
// updates, to undo the status changes of anyone but its own service
// accounts, while here node agents write VMI status under identities of
// their own, and must never be undone.
var (
	mutating = []webhook{
		{"virtualmachines-mutator.kubevirt.io", []admissionregistrationv1.OperationType{create, update}, "virtualmachines", VMMutatePath},
		{"virtualmachineinstances-mutator.kubevirt.io", []admissionregistrationv1.OperationType{create}, "virtualmachineinstances", VMIMutatePath},
	}
	validating = []webhook{
		{"virtualmachineinstances-create-validator.kubevirt.io", []admissionregistrationv1.OperationType{create}, "virtualmachineinstances", VMICreateValidatePath},
		{"virtualmachineinstances-update-validator.kubevirt.io", []admissionregistrationv1.OperationType{update}, "virtualmachineinstances", VMIUpdateValidatePath},
		{"virtualmachine-validator.kubevirt.io", []admissionregistrationv1.OperationType{create, update}, "virtualmachines", VMValidatePath},
	}
)

// Configurations returns the mutating and validating webhook
// configurations that send VMs and VMIs to the control plane serving at
// baseURL (https://127.0.0.1:8443), trusting caBundle (PEM) as its
// certificate's authority: each webhook with failurePolicy Fail (no VM or
// VMI is written without its admission), sideEffects None, KubeVirt's
// 10-second timeout, admission review v1, for both API versions KubeVirt
// serves. A nil caBundle leaves it out (the API server then trusts its
// own roots).
func Configurations(baseURL string, caBundle []byte) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	m := &admissionregistrationv1.MutatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: MutatingConfigurationName, Labels: map[string]string{v1.AppLabel: MutatingConfigurationName}},
	}
	for _, w := range mutating {
		m.Webhooks = append(m.Webhooks, admissionregistrationv1.MutatingWebhook{
			Name: w.name, ClientConfig: w.clientConfig(baseURL, caBundle), Rules: w.rules(),
			FailurePolicy: ptr.To(admissionregistrationv1.Fail), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds: ptr.To[int32](timeoutSeconds), AdmissionReviewVersions: []string{"v1"},
		})
	}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: ValidatingConfigurationName, Labels: map[string]string{v1.AppLabel: ValidatingConfigurationName}},
	}
	for _, w := range validating {
		v.Webhooks = append(v.Webhooks, admissionregistrationv1.ValidatingWebhook{
			Name: w.name, ClientConfig: w.clientConfig(baseURL, caBundle), Rules: w.rules(),
			FailurePolicy: ptr.To(admissionregistrationv1.Fail), SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone),
			TimeoutSeconds: ptr.To[int32](timeoutSeconds), AdmissionReviewVersions: []string{"v1"},
		})
	}
	return m, v
}

func (w webhook) clientConfig(baseURL string, caBundle []byte) admissionregistrationv1.WebhookClientConfig {
	return admissionregistrationv1.WebhookClientConfig{URL: ptr.To(baseURL + w.path), CABundle: caBundle}
}

func (w webhook) rules() []admissionregistrationv1.RuleWithOperations {
	return []admissionregistrationv1.RuleWithOperations{{
		Operations: w.operations,
		Rule: admissionregistrationv1.Rule{
			APIGroups:   []string{v1.SchemeGroupVersion.Group},
			APIVersions: v1.ApiSupportedWebhookVersions,
			Resources:   []string{w.resource},
		},
	}}
}
