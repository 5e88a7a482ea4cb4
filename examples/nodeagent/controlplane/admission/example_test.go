package admission_test

import (
	"fmt"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/controlplane/admission"
)

// Configurations are the webhook configurations to install for a control
// plane serving at an address.
func ExampleConfigurations() {
	m, v := admission.Configurations("https://127.0.0.1:8443", nil)
	for _, w := range m.Webhooks {
		fmt.Println(m.Name, w.Name, w.Rules[0].Operations, *w.ClientConfig.URL, *w.FailurePolicy)
	}
	for _, w := range v.Webhooks {
		fmt.Println(v.Name, w.Name, w.Rules[0].Operations, *w.ClientConfig.URL, *w.FailurePolicy)
	}
	// Output:
	// virt-api-mutator virtualmachines-mutator.kubevirt.io [CREATE UPDATE] https://127.0.0.1:8443/virtualmachines-mutate Fail
	// virt-api-mutator virtualmachineinstances-mutator.kubevirt.io [CREATE] https://127.0.0.1:8443/virtualmachineinstances-mutate Fail
	// virt-api-validator virtualmachineinstances-create-validator.kubevirt.io [CREATE] https://127.0.0.1:8443/virtualmachineinstances-validate-create Fail
	// virt-api-validator virtualmachineinstances-update-validator.kubevirt.io [UPDATE] https://127.0.0.1:8443/virtualmachineinstances-validate-update Fail
	// virt-api-validator virtualmachine-validator.kubevirt.io [CREATE UPDATE] https://127.0.0.1:8443/virtualmachines-validate Fail
}
