package convert

import (
	"fmt"
	"net/url"
	"path"

	v1 "kubevirt.io/api/core/v1"
)

// HostLayout places each VMI on a plain libvirt host: everything the VMI
// owns lives in one state folder, StateDir/<namespace>_<name>/, and
// containerDisk images and kernel-boot files come from ImageStore.
//
// ImageStore layout: an image reference (e.g. "quay.io/x/cirros:1.0") maps
// to the folder ImageStore/<url.PathEscape(reference)>/, which is the
// image's file system: its disk is disk.img there (or the containerDisk's
// path), and kernel-boot files are at their kernelPath and initrdPath.
type HostLayout struct {
	// StateDir holds one folder per VMI. Required.
	StateDir string
	// ImageStore holds containerDisk images and kernel-boot files.
	ImageStore string
	// PodNetwork is how the pod network attaches; the zero value is
	// user-mode networking.
	PodNetwork InterfaceAttachment
	// Networks maps a multus networkName to its attachment (a bridge or a
	// libvirt network). A multus network missing here is an error.
	Networks map[string]InterfaceAttachment
}

// Volume returns the host path of spec.volumes[index]. Not written yet.
func (l HostLayout) Volume(vmi *v1.VirtualMachineInstance, index int) (DiskSource, error) {
	return DiskSource{}, fmt.Errorf("not written yet")
}

// Paths returns the VMI's paths in its state folder; kernel-boot files come
// from the image store.
func (l HostLayout) Paths(vmi *v1.VirtualMachineInstance) Paths {
	dir := l.StateFolder(vmi)
	p := Paths{
		SerialSocket: path.Join(dir, "serial0.sock"),
		SerialLog:    path.Join(dir, "serial0.log"),
		VNCSocket:    path.Join(dir, "vnc.sock"),
		NVRAM:        path.Join(dir, "efi-vars.fd"),
	}
	if kb := vmi.Spec.Domain.Firmware; kb != nil && kb.KernelBoot != nil && kb.KernelBoot.Container != nil {
		c := kb.KernelBoot.Container
		root := l.ImageFolder(c.Image)
		if c.KernelPath != "" {
			p.Kernel = path.Join(root, path.Clean("/"+c.KernelPath))
		}
		if c.InitrdPath != "" {
			p.Initrd = path.Join(root, path.Clean("/"+c.InitrdPath))
		}
	}
	return p
}

// StateFolder returns the VMI's state folder, StateDir/<namespace>_<name>.
func (l HostLayout) StateFolder(vmi *v1.VirtualMachineInstance) string {
	return path.Join(l.StateDir, DomainName(vmi))
}

// ImageFolder returns the image store folder of an image reference,
// ImageStore/<url.PathEscape(reference)>.
func (l HostLayout) ImageFolder(reference string) string {
	return path.Join(l.ImageStore, url.PathEscape(reference))
}
