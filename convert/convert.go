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
	// facts are what several areas read, worked out once by start
	// (facts.go).
	facts facts
	// parts are the domain and its parts that nearly every VMI has,
	// allocated together (parts.go).
	parts *domainParts
	// text holds the strings the areas build (text.go).
	text text
	// errs are the problems found so far (next).
	errs field.ErrorList
	// fatal is the error that ended the conversion (next).
	fatal error
}

// start prepares the conversion of vmi: the facts several areas share are
// worked out once, before any area runs, and the domain's common parts are
// allocated.
func (c *converter) start(vmi *v1.VirtualMachineInstance, opts Options) {
	*c = converter{
		vmi:   vmi,
		spec:  &vmi.Spec,
		opts:  opts,
		parts: new(domainParts),
	}
	if opts.Layout != nil {
		c.paths = opts.Layout.Paths(vmi)
	}
	c.facts = gatherFacts(vmi, &c.opts)
	c.text.b.Grow(textSize(vmi))
}

// Convert turns a VMI into a libvirt domain. The VMI should have been
// defaulted (api.Default) and validated (api.Validate) first: Convert does
// not check the VMI's own rules again (given a VMI api.Validate refuses, it
// does not panic, and may return a domain). It refuses what it cannot
// honour on this host, with these options and this layout (the package
// documentation lists it) with an *api.InvalidError (stage
// api.StageConvert) that lists every such field, each a *field.Error naming
// its path. A nil VMI or Layout is a plain error. It does not modify vmi.
func Convert(vmi *v1.VirtualMachineInstance, opts Options) (*libvirtxml.Domain, error) {
	if vmi == nil {
		return nil, fmt.Errorf("convert: nil VirtualMachineInstance")
	}
	if opts.Layout == nil {
		return nil, fmt.Errorf("convert: Options.Layout is required")
	}
	// The converter lives on Convert's stack: the areas are called one by
	// one, not through a table of functions, which would move it to the
	// heap.
	var c converter
	c.start(vmi, opts)
	domainType := opts.DomainType
	if domainType == "" {
		domainType = "kvm"
	}
	d := &c.parts.domain
	d.Type = domainType
	d.Name = c.domainName()
	d.Devices = &c.parts.devices
	// Each area fills its own part of the domain from the VMI, the options
	// and the facts, and calls no other area: the order is the order of
	// the domain's elements, and only rootComplex, which places on the root
	// bus the devices the others made, must come last. A refusal is
	// recorded and the next area runs; any other error ends the conversion
	// (next).
	if !(c.next(c.unsupported(d)) &&
		c.next(c.identity(d)) &&
		c.next(c.memory(d)) &&
		c.next(c.cpu(d)) &&
		c.next(c.iothreads(d)) &&
		c.next(c.sysinfo(d)) &&
		c.next(c.os(d)) &&
		c.next(c.features(d)) &&
		c.next(c.clock(d)) &&
		c.next(c.lifecycle(d)) &&
		c.next(c.disks(d)) &&
		c.next(c.filesystems(d)) &&
		c.next(c.controllers(d)) &&
		c.next(c.interfaces(d)) &&
		c.next(c.hostDevices(d)) &&
		c.next(c.inputs(d)) &&
		c.next(c.graphics(d)) &&
		c.next(c.console(d)) &&
		c.next(c.channels(d)) &&
		c.next(c.balloon(d)) &&
		c.next(c.rng(d)) &&
		c.next(c.watchdog(d)) &&
		c.next(c.tpm(d)) &&
		c.next(c.sound(d)) &&
		c.next(c.launchSecurity(d)) &&
		c.next(c.rootComplex(d))) {
		return nil, c.fatal
	}
	if len(c.errs) > 0 {
		return nil, invalid(c.errs)
	}
	return d, nil
}

// DomainName is the libvirt name of a VMI's domain: "<namespace>_<name>",
// as KubeVirt names it.
func DomainName(vmi *v1.VirtualMachineInstance) string {
	return vmiNamespace(vmi) + "_" + vmi.Name
}

// domainName is DomainName, in the converter's text.
func (c *converter) domainName() string {
	return c.text.join(vmiNamespace(c.vmi), "_", c.vmi.Name)
}

// vmiNamespace is the VMI's namespace, "default" when it has none.
func vmiNamespace(vmi *v1.VirtualMachineInstance) string {
	if vmi.Namespace == "" {
		return "default"
	}
	return vmi.Namespace
}

// identity sets the domain uuid from spec.domain.firmware.uuid.
func (c *converter) identity(d *libvirtxml.Domain) error {
	if fw := c.spec.Domain.Firmware; fw != nil && fw.UUID != "" {
		d.UUID = string(fw.UUID)
	}
	return nil
}

// itemPath is the field path of one item of a list
// (spec.domain.devices.disks[2]), made only when an error names it.
type itemPath struct {
	list  *field.Path
	index int
}

// path returns the item's path.
func (p itemPath) path() *field.Path { return p.list.Index(p.index) }

// Child returns the path of a field of the item, as field.Path's Child.
func (p itemPath) Child(name string, moreNames ...string) *field.Path {
	return p.path().Child(name, moreNames...)
}

// The field paths the areas name in their errors, made once: a path is
// only needed when something is refused.
var (
	specPath        = field.NewPath("spec")
	domainPath      = specPath.Child("domain")
	cpuPath         = domainPath.Child("cpu")
	firmwarePath    = domainPath.Child("firmware")
	efiPath         = firmwarePath.Child("bootloader", "efi")
	kernelBootPath  = firmwarePath.Child("kernelBoot", "container")
	hypervPath      = domainPath.Child("features", "hyperv")
	devicesPath     = domainPath.Child("devices")
	disksPath       = devicesPath.Child("disks")
	filesystemsPath = devicesPath.Child("filesystems")
	interfacesPath  = devicesPath.Child("interfaces")
	hostDevicesPath = devicesPath.Child("hostDevices")
	gpusPath        = devicesPath.Child("gpus")
	networksPath    = specPath.Child("networks")
	volumesPath     = specPath.Child("volumes")
	annotationsPath = field.NewPath("metadata", "annotations")
)
