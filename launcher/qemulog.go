package launcher

import (
	"bufio"
	"bytes"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

// qemuLogDir is where the system libvirtd's QEMU driver logs each domain's
// QEMU process, <name>.log.
const qemuLogDir = "/var/log/libvirt/qemu"

// qemuLogTail is how much of the end of a domain's log endFromLog reads.
const qemuLogTail = 256 << 10

// logShutoffReasons are libvirt's names of the shut-off reasons
// (virDomainShutoffReason), as its QEMU driver logs them when a domain
// stops: "<time>: shutting down, reason=destroyed".
var logShutoffReasons = map[string]domain.Reason{
	"shutdown":      domain.ShutoffShutdown,
	"destroyed":     domain.ShutoffDestroyed,
	"crashed":       domain.ShutoffCrashed,
	"saved":         domain.ShutoffSaved,
	"from snapshot": domain.ShutoffFromSnapshot,
	"daemon":        domain.ShutoffDaemon,
}

// endFromLog reads how the domain called name last stopped, at or after
// since, from libvirt's own log of it: libvirtd forgets a shut-off reason
// when it restarts, its log does not. It knows only the log of a system
// daemon on this host.
func (l *Launcher) endFromLog(name string, since time.Time) (domain.Reason, bool) {
	u, err := url.Parse(l.cfg.URI)
	if err != nil || u.Scheme != "qemu" || u.Host != "" || u.Path != "/system" {
		return 0, false
	}
	f, err := os.Open(filepath.Join(qemuLogDir, name+".log"))
	if err != nil {
		return 0, false
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > qemuLogTail {
		_, _ = f.Seek(-qemuLogTail, io.SeekEnd)
	}
	data, _ := io.ReadAll(f)
	return lastShutoffReason(data, since.Add(-time.Second))
}

// lastShutoffReason finds the last "shutting down, reason=…" line of a
// QEMU log at or after since.
func lastShutoffReason(log []byte, since time.Time) (domain.Reason, bool) {
	var reason domain.Reason
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
