package convert

import (
	"strconv"
	"strings"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/internal/vocab"
)

// text holds the strings one conversion builds (the domain's name, device
// aliases...) in one buffer, so that they cost one allocation between
// them rather than one each. Each string join returns is a slice of the
// buffer: a strings.Builder never writes over bytes it holds, so a string
// stays valid when the buffer later grows into a new array.
type text struct{ b strings.Builder }

// join returns the concatenation of parts.
func (t *text) join(parts ...string) string {
	start := t.b.Len()
	for _, p := range parts {
		t.b.WriteString(p)
	}
	return t.b.String()[start:]
}

// decimal returns n in decimal.
func (t *text) decimal(n uint64) string {
	if n < 100 {
		return strconv.FormatUint(n, 10) // a constant, no allocation
	}
	start := t.b.Len()
	var buf [20]byte
	t.b.Write(strconv.AppendUint(buf[:0], n, 10))
	return t.b.String()[start:]
}

// UserAliasPrefix is KubeVirt's prefix of the alias of a device the VMI
// names (a disk, an interface, an input...): "ua-<name>". Status reports read
// the device's name back from it.
const UserAliasPrefix = vocab.UserAliasPrefix

// Alias prefixes of host devices, as KubeVirt names them: the alias of a
// device-plugin GPU "gpu1" is "ua-gpu-gpu1".
const (
	aliasPrefixHostDevice    = "hostdevice-"
	aliasPrefixDRAHostDevice = "dra-hostdevice-"
	aliasPrefixGPU           = "gpu-"
	aliasPrefixDRAGPU        = "dra-gpu-"
	aliasPrefixSRIOV         = "sriov-"
)

// uaAlias is KubeVirt's user alias of a device, "ua-<name>", for devices
// without parts of their own to hold it.
func (c *converter) uaAlias(name string) *libvirtxml.DomainAlias {
	return &libvirtxml.DomainAlias{Name: c.text.join(UserAliasPrefix, name)}
}

// hostDeviceAlias is the alias of a host device: "ua-<prefix><name>".
func (c *converter) hostDeviceAlias(prefix, name string) *libvirtxml.DomainAlias {
	return &libvirtxml.DomainAlias{Name: c.text.join(UserAliasPrefix, prefix, name)}
}

// textSize is how much text converting vmi builds in the common case: the
// domain's name and the aliases of its devices. A guess that falls short
// costs one more allocation, never a wrong string.
func textSize(vmi *v1.VirtualMachineInstance) int {
	n := len(vmi.Namespace) + len("default") + 1 + len(vmi.Name)
	devs := &vmi.Spec.Domain.Devices
	for i := range devs.Disks {
		n += len(UserAliasPrefix) + len(devs.Disks[i].Name)
	}
	for i := range devs.Interfaces {
		n += len(UserAliasPrefix) + len(devs.Interfaces[i].Name)
	}
	for i := range devs.Inputs {
		n += len(UserAliasPrefix) + len(devs.Inputs[i].Name)
	}
	const hostDevicePrefix = len(UserAliasPrefix) + len(aliasPrefixDRAHostDevice)
	for i := range devs.HostDevices {
		n += hostDevicePrefix + len(devs.HostDevices[i].Name)
	}
	for i := range devs.GPUs {
		n += hostDevicePrefix + len(devs.GPUs[i].Name)
	}
	return n
}
