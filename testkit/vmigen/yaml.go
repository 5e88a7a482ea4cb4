package vmigen

import (
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// YAML returns the VMI as a YAML document, as kubectl and the project's
// commands read it (api.Decode gives the same VMI back).
func YAML(vmi *v1.VirtualMachineInstance) ([]byte, error) {
	return yaml.Marshal(vmi)
}
