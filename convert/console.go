package convert

import "libvirt.org/go/libvirtxml"

// console adds the serial console: serial port 0 bound to the Layout's
// serial socket, logged to the Layout's serial log when serial console
// logging is on, and a pty console on that port. Logging follows KubeVirt:
// spec.domain.devices.logSerialConsole when set, else
// Options.SerialConsoleLog. autoattachSerialConsole false leaves the console
// out.
func (c *converter) console(d *libvirtxml.Domain) error {
	devs := &c.spec.Domain.Devices
	if switchedOff(devs.AutoattachSerialConsole) {
		return nil
	}
	port := uint(0)
	serial := libvirtxml.DomainSerial{
		Target: &libvirtxml.DomainSerialTarget{Port: &port},
		Source: &libvirtxml.DomainChardevSource{
			UNIX: &libvirtxml.DomainChardevSourceUNIX{Mode: "bind", Path: c.paths.SerialSocket},
		},
	}
	logging := c.opts.SerialConsoleLog
	if devs.LogSerialConsole != nil {
		logging = *devs.LogSerialConsole
	}
	if logging {
		serial.Log = &libvirtxml.DomainChardevLog{File: c.paths.SerialLog, Append: "on"}
	}
	d.Devices.Serials = append(d.Devices.Serials, serial)
	consolePort := uint(0)
	d.Devices.Consoles = append(d.Devices.Consoles, libvirtxml.DomainConsole{
		Source: &libvirtxml.DomainChardevSource{Pty: &libvirtxml.DomainChardevSourcePty{}},
		Target: &libvirtxml.DomainConsoleTarget{Type: "serial", Port: &consolePort},
	})
	return nil
}
