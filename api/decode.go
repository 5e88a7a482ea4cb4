package api

import (
	v1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Decode parses a VirtualMachineInstance or VirtualMachine from YAML or JSON.
// Not strict yet.
func Decode(data []byte) (*v1.VirtualMachineInstance, error) {
	vmi := &v1.VirtualMachineInstance{}
	if err := yaml.Unmarshal(data, vmi); err != nil {
		return nil, err
	}
	return vmi, nil
}
