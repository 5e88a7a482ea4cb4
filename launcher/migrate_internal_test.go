package launcher

import (
	"strings"
	"testing"

	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
)

// migrateLive is a source domain as libvirt gives it for a migration: an
// empty disk in the state folder, a hostDisk outside it, a read-only ISO.
const migrateLive = `<domain type='qemu' id='3'>
  <name>ns_vm</name>
  <memory unit='KiB'>262144</memory>
  <metadata>
    <vmi2libvirt:launcher xmlns:vmi2libvirt="https://github.com/vmi2libvirt/vmi2libvirt/launcher"><owner>a</owner></vmi2libvirt:launcher>
  </metadata>
  <os><type arch='x86_64' machine='pc-q35-7.2'>hvm</type><kernel>/srv/a/images/k/vmlinuz</kernel></os>
  <devices>
    <disk type='file' device='disk'><source file='/srv/a/vmis/ns_vm/disk-scratch.img'/><target dev='vda' bus='virtio'/></disk>
    <disk type='file' device='disk'><source file='/shared/disk.img'/><target dev='vdb' bus='virtio'/></disk>
    <disk type='file' device='cdrom'><source file='/srv/a/vmis/ns_vm/cloudinit.iso'/><target dev='sda' bus='sata'/><readonly/></disk>
    <serial type='file'><source path='/srv/a/vmis/ns_vm/serial0.log'/></serial>
  </devices>
</domain>`

// TestMigrateParams: the target's XML has the target's paths and marks;
// the state folder's writable disk is copied (NON_SHARED_INC, listed in
// MigrateDisks), the hostDisk shared (UNSAFE), the read-only ISO neither;
// the target listens on the migration URI's host only; a URI that is not
// tcp://HOST is refused.
func TestMigrateParams(t *testing.T) {
	paths := map[string]string{
		"/srv/a/vmis/ns_vm/disk-scratch.img": "/srv/b/vmis/ns_vm/disk-scratch.img",
		"/srv/a/vmis/ns_vm/cloudinit.iso":    "/srv/b/vmis/ns_vm/cloudinit.iso",
		"/srv/a/vmis/ns_vm/serial0.log":      "/srv/b/vmis/ns_vm/serial0.log",
		"/srv/a/images/k/vmlinuz":            "/srv/b/images/k/vmlinuz",
	}
	tm := hostplan.Marks{Owner: "b", Migration: &hostplan.Migration{Role: hostplan.MigrationTarget, Source: "a", Target: "b"}}
	p, flags, size, err := migrateParams(migrateLive, migrateLive, paths, tm, "tcp://127.0.0.1", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := libvirt.MIGRATE_LIVE | libvirt.MIGRATE_PEER2PEER | libvirt.MIGRATE_PERSIST_DEST | libvirt.MIGRATE_NON_SHARED_INC | libvirt.MIGRATE_UNSAFE
	if flags != want {
		t.Errorf("flags %#x, want %#x", flags, want)
	}
	if strings.Join(p.MigrateDisks, " ") != "vda" || !p.MigrateDisksSet {
		t.Errorf("MigrateDisks %v (set %v), want vda", p.MigrateDisks, p.MigrateDisksSet)
	}
	if p.URI != "tcp://127.0.0.1" || p.ListenAddress != "127.0.0.1" || !p.URISet || !p.ListenAddressSet {
		t.Errorf("URI %q, listen address %q", p.URI, p.ListenAddress)
	}
	for _, x := range []string{p.DestXML, p.PersistXML} {
		if strings.Contains(x, "/srv/a/") || !strings.Contains(x, "'/srv/b/vmis/ns_vm/disk-scratch.img'") ||
			!strings.Contains(x, "'/shared/disk.img'") || !strings.Contains(x, "<owner>b</owner>") || !strings.Contains(x, `role="target"`) {
			t.Errorf("target XML:\n%s", x)
		}
	}
	if size != 256<<20 { // the empty disk file does not exist here: memory only
		t.Errorf("data size %d, want %d", size, 256<<20)
	}
	if p.BandwidthSet {
		t.Errorf("bandwidth %d MiB/s set, want unlimited", p.Bandwidth)
	}
	for in, want := range map[uint64]uint64{1: 1, 8 << 20: 8, 8<<20 + 1: 9} {
		if p, _, _, err := migrateParams(migrateLive, migrateLive, paths, tm, "tcp://127.0.0.1", in); err != nil || !p.BandwidthSet || p.Bandwidth != want {
			t.Errorf("bandwidth of %d bytes/s: %d MiB/s (set %v, %v), want %d", in, p.Bandwidth, p.BandwidthSet, err, want)
		}
	}
	for _, bad := range []string{"unix:///run/x.sock", "tcp://", "127.0.0.1"} {
		if _, _, _, err := migrateParams(migrateLive, migrateLive, paths, tm, bad, 0); err == nil {
			t.Errorf("migration URI %q: no error", bad)
		}
	}
}
