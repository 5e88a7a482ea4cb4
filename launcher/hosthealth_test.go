package launcher

import (
	"testing"
)

// TestKVMProblemOnlyForLocalQEMU: a remote daemon or another driver is not
// this host's /dev/kvm.
func TestKVMProblemOnlyForLocalQEMU(t *testing.T) {
	for _, uri := range []string{"qemu+ssh://host/system", "test:///default", "qemu+tcp://10.0.0.1/system"} {
		if p := kvmProblem(uri, ""); p != "" {
			t.Errorf("%s: %q", uri, p)
		}
	}
}
