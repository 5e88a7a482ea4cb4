package launcher

import (
	"fmt"
	"net/url"
	"time"

	"github.com/vmi2libvirt/vmi2libvirt/internal/hostfiles"
)

// slowCall is how long a capabilities query may take before the launcher
// says libvirt is slow on this host.
const slowCall = time.Second

// kvmProblem tells why the QEMU processes of the libvirt daemon at uri
// cannot open /dev/kvm (hostfiles.KVMProblem), or "" when they can or when
// the daemon is not on this host. qemuUser is Sources.QEMUUser.
func kvmProblem(uri, qemuUser string) string {
	if u, err := url.Parse(uri); err != nil || u.Scheme != "qemu" || u.Host != "" {
		return ""
	}
	return hostfiles.KVMProblem(qemuUser)
}

// checkHostHealth warns, once per launcher, of a host where libvirt cannot
// keep its QEMU capabilities and so answers slowly: a /dev/kvm its QEMU
// user cannot open, or (whatever the cause) a capabilities query that took
// more than slowCall.
func (l *Launcher) checkHostHealth(f hostFacts) {
	if l.warnedHealth.Swap(true) {
		return
	}
	if p := kvmProblem(l.cfg.URI, l.cfg.Sources.QEMUUser); p != "" {
		l.log.Warn("libvirt will be slow on this host: " + p)
		return
	}
	if f.slowest > slowCall {
		l.log.Warn(fmt.Sprintf("libvirt took %s to answer a capabilities query: it may be probing QEMU again on every call; libvirtd's log says why",
			f.slowest.Round(time.Millisecond)))
	}
}
