package api

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
)

// Validate applies KubeVirt's admission rules. Not written yet.
func Validate(vmi *v1.VirtualMachineInstance) field.ErrorList { return nil }
