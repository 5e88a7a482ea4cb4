package hostcaps_test

import (
	"maps"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/hostcaps"
)

// Only an unlimited realtime runtime (-1, as /proc gives it or with
// spaces) labels the node kubevirt.io/realtime.
func TestRealtimeLabels(t *testing.T) {
	realtime := map[string]string{"kubevirt.io/realtime": "true"}
	for _, c := range []struct {
		content string
		want    map[string]string
	}{
		{"-1\n", realtime},
		{" -1 ", realtime},
		{"950000\n", nil}, // the kernel's default
		{"-10\n", nil},
		{"0\n", nil},
		{"", nil}, // missing or unreadable
	} {
		if got := hostcaps.RealtimeLabels([]byte(c.content)); !maps.Equal(got, c.want) {
			t.Errorf("RealtimeLabels(%q) = %v, want %v", c.content, got, c.want)
		}
	}
}
