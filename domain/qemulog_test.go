package domain

import (
	"testing"
	"time"
)

// TestLastShutoff reads how a domain stopped from libvirt's log of it, as
// libvirt 9.0 writes it, ignoring stops before the start in question.
func TestLastShutoff(t *testing.T) {
	log := []byte(`2026-12-01 15:36:52.098+0000: starting up libvirt version: 9.0.0
LC_ALL=C /usr/bin/qemu-system-x86_64 -name guest=default_tiny
2026-12-01T15:37:36.900028Z qemu-system-x86_64: terminating on signal 15 from pid 8732 (libvirtd)
2026-12-01 15:37:38.107+0000: shutting down, reason=destroyed
2026-12-01 15:40:00.000+0000: starting up libvirt version: 9.0.0
2026-12-01 15:41:00.500+0000: shutting down, reason=shutdown
`)
	if r, ok := LastShutoff(log, time.Date(2026, 12, 1, 15, 39, 0, 0, time.UTC)); !ok || r != ShutoffShutdown {
		t.Errorf("after the second start: %v %v, want shutdown", r, ok)
	}
	if r, ok := LastShutoff(log, time.Date(2026, 12, 1, 15, 38, 0, 0, time.UTC)); !ok || r != ShutoffShutdown {
		t.Errorf("the last stop: %v %v", r, ok)
	}
	if _, ok := LastShutoff(log, time.Date(2026, 12, 1, 16, 0, 0, 0, time.UTC)); ok {
		t.Error("a stop before the start counts")
	}
}
