package hostcaps

import (
	"bytes"

	v1 "kubevirt.io/api/core/v1"
)

// SchedRTRuntimePath is the kernel setting KubeVirt's node labeller reads
// (sysctl kernel.sched_rt_runtime_us) to tell whether a host may run
// realtime guests.
const SchedRTRuntimePath = "/proc/sys/kernel/sched_rt_runtime_us"

// RealtimeLabels are the node labels of the content of
// SchedRTRuntimePath, as KubeVirt's node labeller writes them:
// kubevirt.io/realtime=true when it is -1 (realtime tasks may run without
// a limit on their CPU time), none otherwise — the kernel's default 950000
// keeps 5% of each second for other tasks, and a missing or unreadable
// setting (nil) says nothing.
func RealtimeLabels(schedRTRuntimeUS []byte) map[string]string {
	if string(bytes.TrimSpace(schedRTRuntimeUS)) != "-1" {
		return nil
	}
	return map[string]string{v1.RealtimeLabel: "true"}
}
