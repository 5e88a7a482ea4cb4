// Command vmi2libvirt turns KubeVirt VirtualMachineInstances into libvirt
// domains and runs them, with subcommands in the habits of kubectl, virtctl
// and virsh:
//
//	vmi2libvirt convert [-f FILE|DIR|-]... [--layout kubevirt|host] [-o DIR]
//	vmi2libvirt validate [-f FILE|DIR|-]... [-o text|json]
//	vmi2libvirt golden check DIR | golden update DIR
//	vmi2libvirt diff A B
//	vmi2libvirt run FILE [--emulate] [--dry-run]
//	vmi2libvirt status NAME [-o text|json]
//	vmi2libvirt stop NAME
//	vmi2libvirt delete NAME
//	vmi2libvirt console NAME [--force]
//	vmi2libvirt vnc NAME [--listen 127.0.0.1:PORT] [--ws 127.0.0.1:PORT]
//	vmi2libvirt completion bash|zsh|fish|powershell
//
// convert, validate, golden and diff are pure: no libvirt, no cgo. run,
// status, stop, delete, console and vnc drive package launcher, which
// needs cgo and libvirt's library; a binary built with CGO_ENABLED=0 has
// the pure subcommands only, and says so when asked for another.
//
// Exit status: 0 done; 1 an input is not what it must be (an invalid VMI, a
// stale golden fixture, domains that differ); 2 the command line is wrong
// (or names a file, folder or VMI that is not there); 3 the host or libvirt
// failed. Errors go to standard error, one per line, as
// "error: WHERE: WHAT" (a VMI's problems as "FILE:LINE: PATH: MESSAGE").
// Every subcommand has --help, with examples.
package main

import (
	"os"
)

func main() {
	os.Exit(execute(os.Args[1:]))
}
