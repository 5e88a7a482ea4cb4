package convert

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// converter carries what every area of the domain needs while one VMI is
// converted.
type converter struct {
	vmi   *v1.VirtualMachineInstance
	spec  *v1.VirtualMachineInstanceSpec
	opts  Options
	paths Paths
	// virtioModel is the model of virtio devices: "virtio-non-transitional",
	// or "virtio-transitional" when the VMI asks for transitional devices.
	virtioModel string
	// errs are the problems found so far (refuse).
	errs field.ErrorList
}

// Convert turns a VMI into a libvirt domain. The VMI should have been
// defaulted (api.Default) and validated (api.Validate) first; Convert
// refuses anything it cannot honour with an *Error that lists every such
// field, each a *field.Error naming its path. A nil VMI or Layout is a
// plain error. It does not modify vmi.
func Convert(vmi *v1.VirtualMachineInstance, opts Options) (*libvirtxml.Domain, error) {
	if vmi == nil {
		return nil, fmt.Errorf("convert: nil VirtualMachineInstance")
	}
	if opts.Layout == nil {
		return nil, fmt.Errorf("convert: Options.Layout is required")
	}
	c := &converter{
		vmi:         vmi,
		spec:        &vmi.Spec,
		opts:        opts,
		paths:       opts.Layout.Paths(vmi),
		virtioModel: "virtio-non-transitional",
	}
	if t := vmi.Spec.Domain.Devices.UseVirtioTransitional; t != nil && *t {
		c.virtioModel = "virtio-transitional"
	}
	domainType := opts.DomainType
	if domainType == "" {
		domainType = "kvm"
	}
	d := &libvirtxml.Domain{
		Type:    domainType,
		Name:    DomainName(vmi),
		Devices: &libvirtxml.DomainDeviceList{},
	}
	// Each area fills its part of the domain, in the order of this table.
	for _, area := range []func(*converter, *libvirtxml.Domain) error{
		(*converter).unsupported,
		(*converter).identity,
		(*converter).memory,
		(*converter).cpu,
		(*converter).iothreads,
		(*converter).sysinfo,
		(*converter).os,
		(*converter).features,
		(*converter).clock,
		(*converter).lifecycle,
		(*converter).disks,
		(*converter).controllers,
		(*converter).interfaces,
		(*converter).hostDevices,
		(*converter).inputs,
		(*converter).graphics,
		(*converter).console,
		(*converter).channels,
		(*converter).balloon,
		(*converter).rng,
		(*converter).watchdog,
		(*converter).tpm,
		(*converter).sound,
		(*converter).rootComplex,
	} {
		if err := area(c, d); err != nil {
			if err := c.refuse(err); err != nil {
				return nil, err
			}
		}
	}
	if len(c.errs) > 0 {
		return nil, &Error{Errs: c.errs}
	}
	return d, nil
}

// DomainName is the libvirt name of a VMI's domain: "<namespace>_<name>",
// as KubeVirt names it.
func DomainName(vmi *v1.VirtualMachineInstance) string {
	ns := vmi.Namespace
	if ns == "" {
		ns = "default"
	}
	return ns + "_" + vmi.Name
}

// identity sets the domain uuid from spec.domain.firmware.uuid.
func (c *converter) identity(d *libvirtxml.Domain) error {
	if fw := c.spec.Domain.Firmware; fw != nil && fw.UUID != "" {
		d.UUID = string(fw.UUID)
	}
	return nil
}

// The field paths the areas name in their errors, made once: a path is
// only needed when something is refused.
var (
	specPath                  = field.NewPath("spec")
	domainPath                = specPath.Child("domain")
	devicesPath               = domainPath.Child("devices")
	disksPath                 = devicesPath.Child("disks")
	interfacesPath            = devicesPath.Child("interfaces")
	hostDevicesPath           = devicesPath.Child("hostDevices")
	gpusPath                  = devicesPath.Child("gpus")
	inputsPath                = devicesPath.Child("inputs")
	videoPath                 = devicesPath.Child("video")
	watchdogPath              = devicesPath.Child("watchdog")
	hypervPath                = featuresPath.Child("hyperv")
	poolThreadCountPath       = domainPath.Child("ioThreads", "supplementalPoolThreadCount")
	resourcesPath             = domainPath.Child("resources")
	pageSizePath              = memoryPath.Child("hugepages", "pageSize")
	efiPath                   = firmwarePath.Child("bootloader", "efi")
	kernelBootPath            = firmwarePath.Child("kernelBoot")
	kernelBootContainerPath   = kernelBootPath.Child("container")
	networksPath              = specPath.Child("networks")
	volumesPath               = specPath.Child("volumes")
	rootComplexAnnotationPath = field.NewPath("metadata", "annotations").Key(v1.PlacePCIDevicesOnRootComplex)
)
