package convert

import (
	"fmt"
	"path"

	v1 "kubevirt.io/api/core/v1"
)

// KubeVirtLayout is the layout virt-launcher uses inside its pod: the paths
// below /var/run/kubevirt*, tap devices for pod and multus interfaces.
// Domains converted with it can be compared with KubeVirt's own.
type KubeVirtLayout struct{}

// Volume returns the pod path of spec.volumes[index]. Not written yet.
func (KubeVirtLayout) Volume(vmi *v1.VirtualMachineInstance, index int) (DiskSource, error) {
	return DiskSource{}, fmt.Errorf("not written yet")
}

// Paths returns the pod paths of the VMI's sockets, logs, EFI variables and
// kernel-boot files.
func (KubeVirtLayout) Paths(vmi *v1.VirtualMachineInstance) Paths {
	private := "/var/run/kubevirt-private/" + string(vmi.UID)
	p := Paths{
		SerialSocket: private + "/virt-serial0",
		SerialLog:    private + "/virt-serial0-log",
		VNCSocket:    private + "/virt-vnc",
		NVRAM:        "/var/lib/libvirt/qemu/nvram/" + vmi.Name + "_VARS.fd",
	}
	if kb := vmi.Spec.Domain.Firmware; kb != nil && kb.KernelBoot != nil && kb.KernelBoot.Container != nil {
		const dir = "/var/run/kubevirt/container-disks/kernel-boot/"
		if c := kb.KernelBoot.Container; c.KernelPath != "" {
			p.Kernel = dir + path.Base(c.KernelPath)
		}
		if c := kb.KernelBoot.Container; c.InitrdPath != "" {
			p.Initrd = dir + path.Base(c.InitrdPath)
		}
	}
	return p
}
