package hostplan

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

// autoattachSerialConsole is the field that leaves a VMI without a serial
// console.
var autoattachSerialConsole = field.NewPath("spec", "domain", "devices", "autoattachSerialConsole")

// SerialSocket returns the unix socket of a domain's serial port 0. A
// domain without one is the VMI's choice: an *InvalidError naming
// autoattachSerialConsole.
func SerialSocket(d *libvirtxml.Domain) (string, error) {
	if d.Devices != nil {
		for _, s := range d.Devices.Serials {
			if s.Target != nil && s.Target.Port != nil && *s.Target.Port != 0 {
				continue
			}
			if s.Source == nil || s.Source.UNIX == nil || s.Source.UNIX.Path == "" {
				return "", fmt.Errorf("launcher: the serial console of domain %s is not a unix socket", d.Name)
			}
			return s.Source.UNIX.Path, nil
		}
	}
	return "", &pipeline.InvalidError{Kind: api.KindVMI, Stage: "console", Errors: field.ErrorList{
		field.Invalid(autoattachSerialConsole, false, "the VMI has no serial console"),
	}}
}

// autoattachGraphicsDevice is the field that leaves a VMI without
// graphics.
var autoattachGraphicsDevice = field.NewPath("spec", "domain", "devices", "autoattachGraphicsDevice")

// VNCIndex returns the index of a domain's VNC display among its graphics
// devices. A domain without one is the VMI's choice: an *InvalidError
// naming autoattachGraphicsDevice.
func VNCIndex(d *libvirtxml.Domain) (uint, error) {
	if d.Devices != nil {
		for i, g := range d.Devices.Graphics {
			if g.VNC != nil {
				return uint(i), nil
			}
		}
	}
	return 0, &pipeline.InvalidError{Kind: api.KindVMI, Stage: "vnc", Errors: field.ErrorList{
		field.Invalid(autoattachGraphicsDevice, false, "the VMI has no graphics device (VNC)"),
	}}
}
