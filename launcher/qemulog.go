package launcher

import (
	"io"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

// qemuLogDir is where the system libvirtd's QEMU driver logs each domain's
// QEMU process, <name>.log.
const qemuLogDir = "/var/log/libvirt/qemu"

// qemuLogTail is how much of the end of a domain's log endFromLog reads.
const qemuLogTail = 256 << 10

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
	return domain.LastShutoff(data, since.Add(-time.Second))
}
