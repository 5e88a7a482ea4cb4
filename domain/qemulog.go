package domain

import (
	"bufio"
	"bytes"
	"strings"
	"time"
)

// logShutoffReasons are libvirt's names of the shut-off reasons
// (virDomainShutoffReason), as its QEMU driver logs them when a domain
// stops: "<time>: shutting down, reason=destroyed".
var logShutoffReasons = map[string]Reason{
	"shutdown":      ShutoffShutdown,
	"destroyed":     ShutoffDestroyed,
	"crashed":       ShutoffCrashed,
	"saved":         ShutoffSaved,
	"from snapshot": ShutoffFromSnapshot,
	"daemon":        ShutoffDaemon,
}

// LastShutoff finds how a domain last stopped, at or after since, in
// libvirt's log of its QEMU process (/var/log/libvirt/qemu/<name>.log):
// the reason of its last "shutting down, reason=…" line. libvirtd forgets a
// shut-off domain's reason when it restarts; its log does not.
func LastShutoff(log []byte, since time.Time) (Reason, bool) {
	var reason Reason
	found := false
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		stamp, rest, ok := strings.Cut(sc.Text(), ": shutting down, reason=")
		if !ok {
			continue
		}
		at, err := time.Parse("2006-01-02 15:04:05.000-0700", stamp)
		if err != nil || at.Before(since) {
			continue
		}
		if r, ok := logShutoffReasons[strings.TrimSpace(rest)]; ok {
			reason, found = r, true
		}
	}
	return reason, found
}
