package convert

import (
	"fmt"
	"path"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// inputs adds spec.domain.devices.inputs: tablets on the USB (the default
// bus) or virtio bus, alias ua-<name>. autoattachInputDevice adds nothing
// here: as in KubeVirt, where only the VM controller acts on it, a
// VirtualMachine's template gets its input from api.Decode and a bare VMI
// gets none (checked against KubeVirt's code). USB redirection (spec.domain.devices.clientPassthrough) adds
// KubeVirt's four redirection channels, and panic devices are added here
// too: both are small devices that no other area owns.
func (c *converter) inputs(d *libvirtxml.Domain) error {
	devs := &c.spec.Domain.Devices
	if len(devs.Inputs) > 0 {
		d.Devices.Inputs = make([]libvirtxml.DomainInput, 0, len(devs.Inputs))
	}
	for i := range devs.Inputs {
		in := &devs.Inputs[i]
		bus := inputBus(in)
		input := libvirtxml.DomainInput{Type: string(v1.InputTypeTablet), Bus: string(bus), Alias: c.uaAlias(in.Name)}
		if bus == v1.InputBusVirtio {
			input.Model = v1.VirtIO
		}
		d.Devices.Inputs = append(d.Devices.Inputs, input)
	}
	if err := c.usbRedirection(d); err != nil {
		return err
	}
	return c.panicDevices(d)
}

// usbRedirectionChannels is how many USB devices a client may redirect
// (KubeVirt's UsbClientPassthroughMaxNumberOf).
const usbRedirectionChannels = v1.UsbClientPassthroughMaxNumberOf

// usbRedirection adds KubeVirt's USB redirection channels when
// spec.domain.devices.clientPassthrough is set: unix sockets that a client
// such as virtctl usbredir connects to. They live next to the VNC socket,
// named virt-usbredir-0 … virt-usbredir-3 as in virt-launcher's pod.
func (c *converter) usbRedirection(d *libvirtxml.Domain) error {
	if c.spec.Domain.Devices.ClientPassthrough == nil {
		return nil
	}
	if c.paths.VNCSocket == "" {
		return field.Forbidden(devicesPath.Child("clientPassthrough"),
			"the layout names no socket folder for USB redirection")
	}
	dir := path.Dir(c.paths.VNCSocket)
	for i := range usbRedirectionChannels {
		d.Devices.RedirDevs = append(d.Devices.RedirDevs, libvirtxml.DomainRedirDev{
			Bus: "usb",
			Source: &libvirtxml.DomainChardevSource{
				UNIX: &libvirtxml.DomainChardevSourceUNIX{Mode: "bind", Path: fmt.Sprintf("%s/virt-usbredir-%d", dir, i)},
			},
		})
	}
	return nil
}

// panicDevices adds spec.domain.devices.panicDevices; a device without a
// model gets libvirt's default for the machine. Each model is written as
// KubeVirt writes it; the pvpanic model (QEMU's PCI pvpanic device) is
// refused where the host's libvirt lacks it (LackPvpanic: libvirt 9.0
// refuses the domain, 9.1 added the model).
func (c *converter) panicDevices(d *libvirtxml.Domain) error {
	for i, p := range c.spec.Domain.Devices.PanicDevices {
		var model string
		if p.Model != nil {
			model = string(*p.Model)
		}
		if model == string(v1.Pvpanic) && !c.opts.HostFacts.Has(LackPvpanic) {
			return refuseLack(devicesPath.Child("panicDevices").Index(i).Child("model"), LackPvpanic)
		}
		d.Devices.Panics = append(d.Devices.Panics, libvirtxml.DomainPanic{Model: model})
	}
	return nil
}
