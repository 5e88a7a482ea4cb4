package api

import (
	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/types"
	v1 "kubevirt.io/api/core/v1"
)

// firmwareUUIDSpace is the namespace UUID of derived firmware UUIDs: the
// SHA-1 name-based UUID of
// "https://github.com/vmi2libvirt/vmi2libvirt/firmware-uuid" in the URL
// namespace. Changing it changes every derived UUID: never change it.
var firmwareUUIDSpace = uuid.MustParse("0afdb69c-774c-5906-bd17-d78203927305")

// FirmwareUUID is the firmware UUID Default gives a VMI that has none: the
// name-based (version 5, SHA-1) UUID of "<namespace>/<name>" in a fixed
// namespace UUID. KubeVirt picks a random one for a bare VMI (and one from
// the name alone for a VM); deriving it from namespace and name keeps it
// stable across restarts and distinct between namespaces on one host.
func FirmwareUUID(namespace, name string) types.UID {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	return types.UID(uuid.NewSHA1(firmwareUUIDSpace, []byte(namespace+"/"+name)).String())
}

// vmFirmwareUUIDSpace is the namespace UUID in which KubeVirt's VM controller
// derives the firmware UUID of a VirtualMachine's VMI from the VM's name.
var vmFirmwareUUIDSpace = uuid.MustParse("6a1a24a1-4061-4607-8bf4-a3963d0c5895")

// VMFirmwareUUID is the firmware UUID KubeVirt gives the VMI of a
// VirtualMachine whose template names none: the name-based (version 5,
// SHA-1) UUID of the VM's name alone, so that a VM moved between KubeVirt and
// this library keeps the SMBIOS UUID its guest has seen.
func VMFirmwareUUID(name string) types.UID {
	return types.UID(uuid.NewSHA1(vmFirmwareUUIDSpace, []byte(name)).String())
}

// defaultIdentity puts a VMI without namespace in "default" and gives it a
// derived firmware UUID when it has none (before kubevirt.io/api's defaults
// would pick a random one).
func defaultIdentity(vmi *v1.VirtualMachineInstance, _ ClusterConfig) {
	if vmi.Namespace == "" {
		vmi.Namespace = DefaultNamespace
	}
	d := &vmi.Spec.Domain
	if d.Firmware == nil {
		d.Firmware = &v1.Firmware{}
	}
	if d.Firmware.UUID == "" {
		d.Firmware.UUID = FirmwareUUID(vmi.Namespace, vmi.Name)
	}
}
