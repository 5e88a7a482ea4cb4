package launcher

import (
	"fmt"
	"net/url"
	"os/user"
	"strconv"
	"syscall"
	"time"
)

// slowCall is how long a capabilities query may take before the launcher
// says libvirt is slow on this host.
const slowCall = time.Second

// kvmDevice is the device QEMU opens for KVM.
const kvmDevice = "/dev/kvm"

// kvmProblem tells why the QEMU processes of the libvirt daemon at uri
// cannot open /dev/kvm, or "" when they can, when there is no /dev/kvm, or
// when the daemon is not on this host. On such a host libvirt throws its
// QEMU capabilities away and probes QEMU again on every call ("KVM was
// enabled when probing …, but it is not available now"): seconds per call.
// qemuUser is Sources.QEMUUser ("" for qemu.conf's or the default).
func kvmProblem(uri, qemuUser string) string {
	if u, err := url.Parse(uri); err != nil || u.Scheme != "qemu" || u.Host != "" {
		return ""
	}
	var st syscall.Stat_t
	if err := syscall.Stat(kvmDevice, &st); err != nil {
		return ""
	}
	o, err := resolveQEMUOwner(qemuUser)
	if err != nil || o == nil || o.canOpen(st) {
		return ""
	}
	return fmt.Sprintf("%s is %s, which QEMU's user %s cannot open, so libvirt probes QEMU again on every call (seconds each). "+
		"Fix: chgrp kvm %s && chmod 0660 %s, as Debian's udev rule does (.ci/prepare-host.sh does it)",
		kvmDevice, describeOwner(st), o.name, kvmDevice, kvmDevice)
}

// canOpen tells whether QEMU's user may open a file of stat st for
// reading and writing.
func (o *qemuOwner) canOpen(st syscall.Stat_t) bool {
	mode := st.Mode & 0o777
	switch {
	case int(st.Uid) == o.uid:
		return mode&0o600 == 0o600
	case o.groups[int(st.Gid)]:
		return mode&0o060 == 0o060
	default:
		return mode&0o006 == 0o006
	}
}

// describeOwner prints a stat's owner, group and mode: "root:root 0600".
func describeOwner(st syscall.Stat_t) string {
	owner, group := strconv.FormatUint(uint64(st.Uid), 10), strconv.FormatUint(uint64(st.Gid), 10)
	if u, err := user.LookupId(owner); err == nil {
		owner = u.Username
	}
	if g, err := user.LookupGroupId(group); err == nil {
		group = g.Name
	}
	return fmt.Sprintf("%s:%s %04o", owner, group, st.Mode&0o777)
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
