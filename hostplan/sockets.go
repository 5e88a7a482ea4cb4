package hostplan

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"libvirt.org/go/libvirtxml"
)

// MaxSocketPath is the longest path a UNIX socket can be bound to on Linux:
// sun_path holds 108 bytes, the terminating NUL among them.
const MaxSocketPath = 107

// socketPathErrors refuses the domain of the VMI called name whose UNIX
// sockets (the serial console's, the VNC server's, the downward metrics
// channel's: under the VMI's state folder, named after its namespace and name) have paths too long to
// bind. libvirt defines such a domain and fails only when it starts it,
// with an internal error.
func socketPathErrors(d *libvirtxml.Domain, name string) field.ErrorList {
	var errs field.ErrorList
	check := func(what, path string) {
		if len(path) > MaxSocketPath {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), name,
				fmt.Sprintf("the %s socket %s is %d bytes long, more than the %d a UNIX socket path can hold: shorten the namespace and name, or the layout's StateDir",
					what, path, len(path), MaxSocketPath)))
		}
	}
	if d.Devices == nil {
		return nil
	}
	for _, s := range d.Devices.Serials {
		if s.Source != nil && s.Source.UNIX != nil {
			check("serial console", s.Source.UNIX.Path)
		}
	}
	for _, c := range d.Devices.Channels {
		if c.Source != nil && c.Source.UNIX != nil && c.Source.UNIX.Path != "" {
			check("downward metrics", c.Source.UNIX.Path)
		}
	}
	for _, g := range d.Devices.Graphics {
		if g.VNC == nil {
			continue
		}
		for _, l := range g.VNC.Listeners {
			if l.Socket != nil {
				check("VNC", l.Socket.Socket)
			}
		}
	}
	return errs
}
