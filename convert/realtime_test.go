package convert

import (
	"strings"
	"testing"

	v1 "kubevirt.io/api/core/v1"
)

// A realtime VMI's booted vCPUs that its mask names get SCHED_FIFO at
// priority 1, one <vcpusched> each: not the vCPUs that can be plugged in
// later (KubeVirt's handler schedules the threads there are at start),
// none for a mask that names none or that api.Validate refuses; the PMU is
// off and the NUMA cells' pages are not merged.
func TestRealtime(t *testing.T) {
	for _, tc := range []struct {
		mask       string
		maxSockets uint32
		want       string // the vCPUs scheduled, comma-separated
	}{
		{"", 0, "0,1,2,3"},
		{"^1,0-3", 0, "0,2,3"},
		{"1,^1", 0, ""},
		{"2-7", 2, "2,3"},
		{"1-", 0, ""},
	} {
		vmi := numaVMI(4, "1Gi")
		vmi.Spec.Domain.CPU.Realtime = &v1.Realtime{Mask: tc.mask}
		vmi.Spec.Domain.CPU.Sockets, vmi.Spec.Domain.CPU.MaxSockets = 1, tc.maxSockets
		d, _, err := runArea(t, vmi, func(o *Options) {
			o.CPUSet = []uint{2, 3, 4, 5}
			o.HostFacts.NUMA = twoCells
		}, (*converter).cpu, (*converter).memory, (*converter).features)
		if err != nil {
			t.Fatalf("mask %q: %v", tc.mask, err)
		}
		var got []string
		for _, s := range d.CPUTune.VCPUSched {
			if s.Scheduler != "fifo" || s.Priority == nil || *s.Priority != 1 {
				t.Errorf("mask %q: vcpusched %+v, want fifo at priority 1", tc.mask, s)
			}
			got = append(got, s.VCPUs)
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("mask %q: vCPUs %v scheduled, want %s", tc.mask, got, tc.want)
		}
		if d.Features == nil || d.Features.PMU == nil || d.Features.PMU.State != "off" {
			t.Errorf("mask %q: features %+v, want the PMU off", tc.mask, d.Features)
		}
		if d.MemoryBacking == nil || d.MemoryBacking.MemoryNosharepages == nil {
			t.Errorf("mask %q: memoryBacking %+v, want nosharepages", tc.mask, d.MemoryBacking)
		}
	}
}

// Without the host's NUMA cells a realtime VMI is refused where its
// passthrough is.
func TestRealtimeWithoutNUMA(t *testing.T) {
	vmi := numaVMI(2, "1Gi")
	vmi.Spec.Domain.CPU.Realtime = &v1.Realtime{}
	_, _, err := runArea(t, vmi, nil, (*converter).cpu)
	if err == nil || !strings.Contains(err.Error(), "spec.domain.cpu.numa.guestMappingPassthrough") {
		t.Errorf("err = %v, want a refusal of the passthrough", err)
	}
}
