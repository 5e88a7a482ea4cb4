// Package launcher runs VirtualMachineInstances on a libvirt host: it
// prepares their host artifacts, defines and starts their domains, watches
// libvirt's events and reports each VMI's status. It is the only package of
// the module that talks to libvirt (cgo, libvirt.org/go/libvirt).
package launcher
