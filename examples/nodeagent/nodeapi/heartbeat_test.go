package nodeapi

import (
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	v1 "kubevirt.io/api/core/v1"
)

func TestParseHeartbeat(t *testing.T) {
	n := &k8sv1.Node{}
	if _, ok, err := ParseHeartbeat(n); ok || err != nil {
		t.Errorf("no annotation: %v %v", ok, err)
	}
	n.Annotations = map[string]string{v1.VirtHandlerHeartbeat: "2026-12-02T12:00:00Z"}
	if at, ok, err := ParseHeartbeat(n); !ok || err != nil || !at.Equal(time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("parsed %v %v %v", at, ok, err)
	}
	n.Annotations[v1.VirtHandlerHeartbeat] = "yesterday"
	if _, ok, err := ParseHeartbeat(n); !ok || err == nil {
		t.Errorf("a bad time: %v %v", ok, err)
	}
}

func TestFormatHeartbeat(t *testing.T) {
	at := time.Date(2026, 12, 2, 13, 0, 1, 500, time.FixedZone("CET", 3600))
	if got := FormatHeartbeat(at); got != "2026-12-02T12:00:01Z" {
		t.Errorf("FormatHeartbeat: %s", got)
	}
}
