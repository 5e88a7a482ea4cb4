package cmdutil

import (
	"fmt"
	"strings"

	k8sv1 "k8s.io/api/core/v1"
	v1 "kubevirt.io/api/core/v1"
)

// StatusLine formats a status as one line of key=value pairs, the phase
// first.
func StatusLine(st v1.VirtualMachineInstanceStatus) string {
	parts := []string{"phase=" + string(st.Phase)}
	if st.Reason != "" {
		parts = append(parts, "reason="+st.Reason)
	}
	for _, c := range st.Conditions {
		switch c.Type {
		case v1.VirtualMachineInstanceReady:
			parts = append(parts, "ready="+string(c.Status))
		case v1.VirtualMachineInstancePaused:
			if c.Status == k8sv1.ConditionTrue {
				parts = append(parts, "paused="+c.Reason)
			}
		case v1.VirtualMachineInstanceAgentConnected:
			if c.Status == k8sv1.ConditionTrue {
				parts = append(parts, "agent=connected")
			}
		}
	}
	if st.Machine != nil {
		parts = append(parts, "machine="+st.Machine.Type)
	}
	for _, i := range st.Interfaces {
		s := "iface=" + i.Name + "/" + i.MAC
		if len(i.IPs) > 0 {
			s += "/" + strings.Join(i.IPs, ",")
		}
		parts = append(parts, s)
	}
	if st.GuestOSInfo.PrettyName != "" {
		parts = append(parts, fmt.Sprintf("os=%q", st.GuestOSInfo.PrettyName))
	}
	return strings.Join(parts, " ")
}
