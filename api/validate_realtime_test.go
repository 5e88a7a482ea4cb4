package api

import (
	"strings"
	"testing"

	v1 "kubevirt.io/api/core/v1"
)

// validateRealtimeMask takes the masks KubeVirt's virt-handler reads that
// name only the VMI's vCPUs (up to maxSockets'), and refuses the others at
// spec.domain.cpu.realtime.mask.
func TestValidateRealtimeMask(t *testing.T) {
	for _, c := range []struct {
		mask                           string
		sockets, maxSockets, cores, th uint32
		err                            string // a part of the error; "" for none
	}{
		{"", 1, 0, 4, 1, ""},
		{"0-3,^1", 1, 0, 4, 1, ""},
		{"^1,0-3", 1, 0, 4, 1, ""},
		{"0-7", 1, 2, 4, 1, ""},
		{"7", 2, 0, 2, 2, ""},
		{"0-4", 1, 0, 4, 1, "names vCPU 4; the VMI's vCPUs are 0-3"},
		{"^4", 1, 0, 4, 1, "names vCPU 4"},
		{"8", 1, 2, 4, 1, "names vCPU 8; the VMI's vCPUs are 0-7"},
		{"1 - 2", 1, 0, 4, 1, "is not a vCPU"},
		{"3-1", 1, 0, 4, 1, "starts above its end"},
		{"01", 1, 0, 4, 1, "leading zero"},
	} {
		cpu := &v1.CPU{Sockets: c.sockets, MaxSockets: c.maxSockets, Cores: c.cores, Threads: c.th, Realtime: &v1.Realtime{Mask: c.mask}}
		errs := validateRealtimeMask(cpu)
		switch {
		case c.err == "" && len(errs) > 0:
			t.Errorf("mask %q: %v, want none", c.mask, errs)
		case c.err != "" && (len(errs) != 1 || errs[0].Field != "spec.domain.cpu.realtime.mask" || !strings.Contains(errs[0].Error(), c.err)):
			t.Errorf("mask %q: %v, want one error at spec.domain.cpu.realtime.mask with %q", c.mask, errs, c.err)
		}
	}
}
