//go:build cgo

package main

import "github.com/spf13/cobra"

// libvirtCommands are the subcommands that drive libvirt through package
// launcher (cgo).
func libvirtCommands() []*cobra.Command {
	return []*cobra.Command{newRunCommand(), newApplyCommand(), newStatusCommand(), newStopCommand(), newDeleteCommand(), newConsoleCommand(), newVNCCommand(), newHostCommand(), newMigrateCommand()}
}

// withoutCgo is empty: this build has every subcommand.
func withoutCgo(string) string { return "" }
