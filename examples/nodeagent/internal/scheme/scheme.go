// Package scheme is the runtime.Scheme the node agent and the control
// plane share: Kubernetes' built-in types and KubeVirt's kubevirt.io/v1.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	v1 "kubevirt.io/api/core/v1"
)

// New returns a scheme that knows Kubernetes' built-in types and
// KubeVirt's kubevirt.io/v1.
func New() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}
