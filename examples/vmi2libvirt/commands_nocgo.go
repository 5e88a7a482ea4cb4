//go:build !cgo

package main

import (
	"slices"

	"github.com/spf13/cobra"
)

// libvirtCommands is empty without cgo: package launcher needs it.
func libvirtCommands() []*cobra.Command { return nil }

// withoutCgo explains why a subcommand that drives libvirt is unknown.
func withoutCgo(name string) string {
	if slices.Contains(libvirtCommandNames, name) {
		return ": this vmi2libvirt was built without cgo, which " + name + " needs (package launcher): build it with CGO_ENABLED=1 and libvirt's development files (libvirt-dev)"
	}
	return ""
}
