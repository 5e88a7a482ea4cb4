package imagestore

import (
	"context"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kv "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// TestHostLayoutImages hands the converter's host layout what the store
// resolved: the containerDisk's overlay backs onto the pulled disk, and the
// kernel and initrd are the pulled ones.
func TestHostLayoutImages(t *testing.T) {
	reg := newRegistry(t)
	diskRef, _ := reg.push(t, "disks/cirros:1", imageOf(t, layerOf(t, file("disk/cirros.qcow2", "disk"))))
	bootRef, _ := reg.push(t, "boot/guest:1", imageOf(t, layerOf(t, file("boot/vmlinuz", "kernel"), file("boot/initrd.img", "initrd"))))
	s := newStore(t, Config{})
	ctx := context.Background()
	disk, err := s.Resolve(ctx, Request{Reference: diskRef})
	if err != nil {
		t.Fatal(err)
	}
	boot, err := s.Resolve(ctx, Request{Reference: bootRef})
	if err != nil {
		t.Fatal(err)
	}
	diskPath, err := disk.DiskPath("")
	if err != nil {
		t.Fatal(err)
	}
	layout := convert.HostLayout{StateDir: "/var/lib/vmi2libvirt/vmis", Images: map[string]convert.HostImage{
		diskRef: {Dir: disk.Dir, Disk: diskPath},
		bootRef: {Dir: boot.Dir},
	}}
	vmi := &kv.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "vm"},
		Spec: kv.VirtualMachineInstanceSpec{
			Volumes: []kv.Volume{{Name: "root", VolumeSource: kv.VolumeSource{ContainerDisk: &kv.ContainerDiskSource{Image: diskRef}}}},
			Domain: kv.DomainSpec{Firmware: &kv.Firmware{KernelBoot: &kv.KernelBoot{Container: &kv.KernelBootContainer{
				Image: bootRef, KernelPath: "/boot/vmlinuz", InitrdPath: "/boot/initrd.img",
			}}}},
		},
	}
	a, err := layout.VolumeArtifact(vmi, 0)
	if err != nil {
		t.Fatal(err)
	}
	wantDisk, err := disk.HostPath(diskPath)
	if err != nil {
		t.Fatal(err)
	}
	if a.BackingPath != wantDisk || readFile(t, a.BackingPath) != "disk" {
		t.Errorf("overlay backing %s, want %s", a.BackingPath, wantDisk)
	}
	paths := layout.Paths(vmi)
	for got, want := range map[string]string{paths.Kernel: "kernel", paths.Initrd: "initrd"} {
		if filepath.Dir(filepath.Dir(got)) != boot.Dir || readFile(t, got) != want {
			t.Errorf("kernel-boot file %s, want the %s of %s", got, want, boot.Dir)
		}
	}
	// A reference the store did not resolve keeps the older folder.
	if got := layout.ImageFolder("other:1"); got != "other:1" {
		t.Errorf("ImageFolder(other:1) = %s", got)
	}
}
