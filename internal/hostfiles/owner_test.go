package hostfiles

import (
	"syscall"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
)

// TestQEMUCanOpen: QEMU's user may open a device by owner, group or others,
// as the kernel decides; a root:root 0600 /dev/kvm is closed to it, the
// root:kvm 0660 of Debian's udev rule open when it is in group kvm.
func TestQEMUCanOpen(t *testing.T) {
	qemu := &hostplan.User{Name: "libvirt-qemu", UID: 64055, GID: 64055, Groups: []int{64055, 108}}
	for _, c := range []struct {
		uid, gid uint32
		mode     uint32
		want     bool
	}{
		{0, 0, 0o600, false},       // no udev: root:root 0600
		{0, 108, 0o660, true},      // udev: root:kvm 0660, QEMU in kvm
		{0, 108, 0o600, false},     // group without rw
		{0, 109, 0o660, false},     // another group
		{0, 0, 0o666, true},        // open to all
		{64055, 0, 0o600, true},    // QEMU's own
		{64055, 108, 0o060, false}, // owner bits decide for the owner
	} {
		st := syscall.Stat_t{Uid: c.uid, Gid: c.gid, Mode: syscall.S_IFCHR | c.mode}
		if got := CanOpen(qemu, st); got != c.want {
			t.Errorf("%d:%d %04o: canOpen = %v, want %v", c.uid, c.gid, c.mode, got, c.want)
		}
	}
}
