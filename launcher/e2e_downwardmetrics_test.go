package launcher_test

import (
	"encoding/xml"
	"fmt"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// TestE2EDownwardMetrics boots the test guest with the downward metrics
// channel: it writes vm-dump-metrics' request to the virtio port
// org.github.vhostmd.1 and reads the launcher's answer, vhostmd's metrics
// document with the guest's vCPUs and memory and the launcher's host name.
func TestE2EDownwardMetrics(t *testing.T) {
	e := newEnv(t)
	vmi := decodeVMI(t, fmt.Sprintf(vmiYAML, uniqueName("metrics"), 0, "",
		testguest.ActionPowerOff+" "+testguest.MetricsArg,
		"    cpu: {cores: 2}\n    memory:\n      guest: 128Mi\n", "      downwardMetrics: {}", ""))
	e.sync(t, vmi)
	r := e.waitConsole(t, vmi, bootTimeout)
	var doc struct {
		Metrics []struct {
			Type    string `xml:"type,attr"`
			Context string `xml:"context,attr"`
			Unit    string `xml:"unit,attr"`
			Name    string `xml:"name"`
			Value   string `xml:"value"`
		} `xml:"metric"`
	}
	if err := xml.Unmarshal([]byte(r.Metrics), &doc); err != nil {
		t.Fatalf("the guest read no metrics document: %v\n%q", err, r.Metrics)
	}
	got := map[string]string{}
	for _, m := range doc.Metrics {
		got[m.Context+"/"+m.Name] = m.Value
	}
	for key, want := range map[string]string{
		"vm/ResourceProcessorLimit":                 "2",
		"vm/PhysicalMemoryAllocatedToVirtualSystem": "131072",
		"host/HostSystemInfo":                       "linux",
	} {
		if got[key] != want {
			t.Errorf("%s = %q, want %q", key, got[key], want)
		}
	}
	if got["host/HostName"] == "" || got["host/Time"] == "" || got["vm/TotalCPUTime"] == "" || len(doc.Metrics) != 17 {
		t.Errorf("metrics %v: want 17, with the host's name, the time and the guest's CPU time", got)
	}
}
