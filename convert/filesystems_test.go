package convert

import (
	"strings"
	"testing"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// socketlessLayout is the KubeVirt layout without a downward metrics socket.
type socketlessLayout struct{ KubeVirtLayout }

func (l socketlessLayout) Paths(vmi *v1.VirtualMachineInstance) Paths {
	p := l.KubeVirtLayout.Paths(vmi)
	p.DownwardMetricsSocket = ""
	return p
}

// The forms of a filesystem and of the downward metrics channel the
// converter refuses, each with the field it names.
func TestFilesystemsAndMetricsRefused(t *testing.T) {
	share := func(v *v1.VirtualMachineInstance) {
		v.Spec.Domain.Devices.Filesystems = []v1.Filesystem{{Name: "share", Virtiofs: &v1.FilesystemVirtiofs{}}}
		v.Spec.Volumes = []v1.Volume{{Name: "share", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}}}
	}
	for _, tc := range []struct {
		name string
		edit func(*v1.VirtualMachineInstance)
		opts func(*Options)
		area func(*converter, *libvirtxml.Domain) error
		want string
	}{
		{"filesystem without virtiofs", func(v *v1.VirtualMachineInstance) {
			share(v)
			v.Spec.Domain.Devices.Filesystems[0].Virtiofs = nil
		}, nil, (*converter).filesystems, `spec.domain.devices.filesystems[0].virtiofs: Required value`},
		{"filesystem without its volume", func(v *v1.VirtualMachineInstance) {
			share(v)
			v.Spec.Volumes[0].Name = "other"
		}, nil, (*converter).filesystems, `spec.domain.devices.filesystems[0].name: Invalid value: "share": no volume of this name`},
		{"filesystem named like a folder", func(v *v1.VirtualMachineInstance) {
			share(v)
			v.Spec.Domain.Devices.Filesystems[0].Name = "../x"
			v.Spec.Volumes[0].Name = "../x"
		}, nil, (*converter).filesystems, `spec.domain.devices.filesystems[0].name: Invalid value: "../x": must be usable as a file name`},
		{"host layout: containerDisk shared", func(v *v1.VirtualMachineInstance) {
			share(v)
			v.Spec.Volumes[0].VolumeSource = v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: "x"}}
		}, func(o *Options) { o.Layout = HostLayout{StateDir: "/s", ImageStore: "/i"} }, (*converter).filesystems,
			`spec.volumes[0].containerDisk: Forbidden: the host layout shares only`},
		{"downward metrics without a socket", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.DownwardMetrics = &v1.DownwardMetrics{}
		}, func(o *Options) { o.Layout = socketlessLayout{} }, (*converter).channels,
			`spec.domain.devices.downwardMetrics: Forbidden: the layout names no socket`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := devVMI(nil, nil)
			tc.edit(vmi)
			_, err := runDeviceArea(t, devConverter(vmi, tc.opts), tc.area)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error = %v\nwant    %s…", err, tc.want)
			}
		})
	}
}

// Guest memory is shared from a memfd exactly when a filesystem uses
// virtiofs (or hugepages ask for a memfd), as KubeVirt's isMemfdRequired.
func TestSharedMemoryFact(t *testing.T) {
	vmi := devVMI(nil, nil)
	if f := gatherFacts(vmi, &Options{}); f.sharedMemory || f.memfd {
		t.Errorf("no filesystem: sharedMemory %v, memfd %v; want false, false", f.sharedMemory, f.memfd)
	}
	vmi.Spec.Domain.Devices.Filesystems = []v1.Filesystem{{Name: "a"}}
	if f := gatherFacts(vmi, &Options{}); f.sharedMemory || f.memfd {
		t.Errorf("filesystem without virtiofs: sharedMemory %v, memfd %v; want false, false", f.sharedMemory, f.memfd)
	}
	vmi.Spec.Domain.Devices.Filesystems = append(vmi.Spec.Domain.Devices.Filesystems, v1.Filesystem{Name: "b", Virtiofs: &v1.FilesystemVirtiofs{}})
	vmi.Annotations = map[string]string{v1.MemfdMemoryBackend: "false"}
	if f := gatherFacts(vmi, &Options{}); !f.sharedMemory || !f.memfd {
		t.Errorf("virtiofs, memfd annotation false: sharedMemory %v, memfd %v; want true, true", f.sharedMemory, f.memfd)
	}
}
