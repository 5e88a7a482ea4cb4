package hostfiles

import (
	"fmt"
	"os/user"
	"strconv"
	"syscall"
)

// kvmDevice is the device QEMU opens for KVM.
const kvmDevice = "/dev/kvm"

// KVMProblem tells why QEMU, run by the libvirt daemon of this host as
// qemuUser ("" for qemu.conf's or the default, as QEMUUser reads it),
// cannot open /dev/kvm, or "" when it can or when there is no /dev/kvm. On such a host libvirt throws its
// QEMU capabilities away and probes QEMU again on every call ("KVM was
// enabled when probing …, but it is not available now"): seconds per call.
func KVMProblem(qemuUser string) string {
	var st syscall.Stat_t
	if err := syscall.Stat(kvmDevice, &st); err != nil {
		return ""
	}
	o, err := QEMUUser(qemuUser)
	if err != nil || o == nil || CanOpen(o, st) {
		return ""
	}
	return fmt.Sprintf("%s is %s, which QEMU's user %s cannot open, so libvirt probes QEMU again on every call (seconds each). "+
		"Fix: chgrp kvm %s && chmod 0660 %s, as Debian's udev rule does (.ci/prepare-host.sh does it)",
		kvmDevice, describeOwner(st), o.Name, kvmDevice, kvmDevice)
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
