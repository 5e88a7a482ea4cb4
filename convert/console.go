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
	p := &c.parts.console
	p.serialTarget.Port = &p.serialPort
	p.unix = libvirtxml.DomainChardevSourceUNIX{Mode: "bind", Path: c.paths.SerialSocket}
	p.serialSource.UNIX = &p.unix
	serial := libvirtxml.DomainSerial{Target: &p.serialTarget, Source: &p.serialSource}
	logging := c.opts.SerialConsoleLog
	if devs.LogSerialConsole != nil {
		logging = *devs.LogSerialConsole
	}
	if logging {
		p.log = libvirtxml.DomainChardevLog{File: c.paths.SerialLog, Append: "on"}
		serial.Log = &p.log
	}
	d.Devices.Serials = append(c.parts.serials[:0], serial)
	p.consoleSource.Pty = &p.pty
	p.consoleTarget = libvirtxml.DomainConsoleTarget{Type: "serial", Port: &p.consolePort}
	d.Devices.Consoles = append(c.parts.consoles[:0], libvirtxml.DomainConsole{
		Source: &p.consoleSource,
		Target: &p.consoleTarget,
	})
	return nil
}
