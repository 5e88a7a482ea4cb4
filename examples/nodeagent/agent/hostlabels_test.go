package agent

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/labels"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/nodeapi"
)

// A host whose kernel lets realtime tasks run unlimited
// (sched_rt_runtime_us -1) is labelled kubevirt.io/realtime, and only its
// node may claim a realtime VMI; the kernel's default, or a setting that
// cannot be read, gives no label.
func TestHostLabelsRealtime(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	facts := func(context.Context) (convert.HostFacts, error) {
		return convert.HostFacts{MachineTypes: []string{"q35"}}, nil
	}
	vmi := &v1.VirtualMachineInstance{}
	vmi.Spec.Domain.CPU = &v1.CPU{Realtime: &v1.Realtime{}}
	for _, c := range []struct {
		name, path string
		realtime   bool
	}{
		{"unlimited", write("rt", "-1\n"), true},
		{"the kernel's default", write("default", "950000\n"), false},
		{"unreadable", filepath.Join(dir, "missing"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, err := HostLabels{Facts: facts, Static: labels.Set{"zone": "a"}, SchedRTRuntime: c.path}.NodeLabels(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if got := l[v1.RealtimeLabel] == "true"; got != c.realtime || l["zone"] != "a" || l[v1.SupportedMachineTypeLabel+"q35"] != "true" {
				t.Errorf("labels %v: want realtime %v, the zone and q35", l, c.realtime)
			}
			claims, err := claimable(vmi, nodeObject("node-a", l), nodeapi.Scheduling{})
			if err != nil || claims != c.realtime {
				t.Errorf("claims a realtime VMI: %v, %v; want %v", claims, err, c.realtime)
			}
		})
	}
}
