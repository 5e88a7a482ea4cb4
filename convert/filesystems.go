package convert

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// virtiofsQueue is the request queue size KubeVirt gives each virtiofs
// device.
const virtiofsQueue = 1024

// FilesystemSource is the host side of one virtiofs filesystem
// (spec.domain.devices.filesystems[*]): the socket of a virtiofsd run
// outside libvirt (KubeVirt runs one per filesystem in a container of its
// pod), or the folder a virtiofsd that libvirt starts itself shares, and
// that virtiofsd's binary.
type FilesystemSource struct {
	// Socket is the vhost-user socket of an externally run virtiofsd.
	Socket string
	// Dir is the folder libvirt's virtiofsd shares (when Socket is empty),
	// Binary the virtiofsd libvirt runs ("" lets libvirt find one).
	Dir, Binary string
}

// filesystems writes a <filesystem> for each virtiofs filesystem of
// spec.domain.devices.filesystems, as KubeVirt does: a vhost-user-fs
// device (driver virtiofs, queue 1024, access mode passthrough) whose
// target is the filesystem's name, the tag the guest mounts
// (mount -t virtiofs NAME DIR). The layout says where its host side is
// (Layout.Filesystem). Shared guest memory, which vhost-user needs, is the
// memory area's (facts.sharedMemory).
//
// KubeVirt writes the access mode as accessMode="passthrough", an
// attribute libvirt does not know (the schema refuses it, and libvirt
// reads the missing accessmode as passthrough); here it is libvirt's
// accessmode. A filesystem without virtiofs, which KubeVirt ignores, is
// refused: it would give the guest nothing.
func (c *converter) filesystems(d *libvirtxml.Domain) error {
	fss := c.spec.Domain.Devices.Filesystems
	if len(fss) == 0 {
		return nil
	}
	var probs problems
	out := make([]libvirtxml.DomainFilesystem, 0, len(fss))
	parts := make([]filesystemParts, len(fss))
	for i := range fss {
		fs := &fss[i]
		p := itemPath{filesystemsPath, i}
		if fs.Virtiofs == nil {
			probs.add(field.Required(p.Child("virtiofs"), "the only kind of filesystem is virtiofs"))
			continue
		}
		src, err := c.opts.Layout.Filesystem(c.vmi, i)
		if err != nil {
			if err := probs.add(err); err != nil {
				return err
			}
			continue
		}
		fp := &parts[i]
		fp.driver = libvirtxml.DomainFilesystemDriver{Type: "virtiofs", Queue: virtiofsQueue}
		fp.mount = libvirtxml.DomainFilesystemSourceMount{Socket: src.Socket}
		fsys := libvirtxml.DomainFilesystem{
			AccessMode: "passthrough",
			Driver:     &fp.driver,
			Source:     &libvirtxml.DomainFilesystemSource{Mount: &fp.mount},
			Target:     &libvirtxml.DomainFilesystemTarget{Dir: fs.Name},
		}
		if src.Socket == "" {
			fp.mount.Dir = src.Dir
			fsys.Binary = &libvirtxml.DomainFilesystemBinary{Path: src.Binary}
		}
		out = append(out, fsys)
	}
	if len(out) > 0 {
		d.Devices.Filesystems = out
	}
	return probs.err()
}

// filesystemParts are what one <filesystem> points to.
type filesystemParts struct {
	driver libvirtxml.DomainFilesystemDriver
	mount  libvirtxml.DomainFilesystemSourceMount
}

// hasVirtiofs tells whether the VMI shares a volume by virtiofs, which
// needs the guest's memory shared with virtiofsd (KubeVirt's
// IsVMIVirtiofsEnabled).
func hasVirtiofs(vmi *v1.VirtualMachineInstance) bool {
	for i := range vmi.Spec.Domain.Devices.Filesystems {
		if vmi.Spec.Domain.Devices.Filesystems[i].Virtiofs != nil {
			return true
		}
	}
	return false
}

// filesystemVolume returns the volume spec.domain.devices.filesystems[index]
// shares and its index, refusing a filesystem whose name is no volume's or
// is not usable as a file name (layouts name sockets and folders after
// it).
func filesystemVolume(vmi *v1.VirtualMachineInstance, index int) (*v1.Volume, int, error) {
	fss := vmi.Spec.Domain.Devices.Filesystems
	if index < 0 || index >= len(fss) {
		return nil, -1, fmt.Errorf("convert: the VMI has no spec.domain.devices.filesystems[%d]", index)
	}
	name := fss[index].Name
	np := filesystemsPath.Index(index).Child("name")
	if !usableFileName(name) {
		return nil, -1, field.Invalid(np, name, "must be usable as a file name")
	}
	for i := range vmi.Spec.Volumes {
		if vmi.Spec.Volumes[i].Name == name {
			return &vmi.Spec.Volumes[i], i, nil
		}
	}
	return nil, -1, field.Invalid(np, name, "no volume of this name")
}

// usableFileName tells whether a volume's name can name a file: not empty,
// ".", "..", and without a slash or a NUL.
func usableFileName(name string) bool {
	return name != "" && name != "." && name != ".." && strings.IndexByte(name, '/') < 0 && strings.IndexByte(name, 0) < 0
}
