package main

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// newRootCommand is vmi2libvirt with every subcommand: the pure ones, then
// those that drive libvirt (libvirtCommands, empty without cgo).
func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "vmi2libvirt",
		Short: "Turn KubeVirt VirtualMachineInstances into libvirt domains, and run them",
		Long: `vmi2libvirt takes KubeVirt VirtualMachineInstances (kubevirt.io/v1, as KubeVirt users
write them), applies KubeVirt's admission defaults and validation, converts them to
the libvirt domain XML KubeVirt's virt-launcher would give them, and runs them on a
plain libvirt host.

Exit status:
  0  done
  1  an input is not what it must be: an invalid VMI, a stale golden fixture,
     domains that differ
  2  the command line is wrong, or names a file, folder or VMI that is not there
  3  the host or libvirt failed
Errors are printed on standard error, one per line: "error: WHERE: WHAT".`,
		Version:       version(),
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.AddCommand(newConvertCommand(), newValidateCommand(), newGoldenCommand(), newDiffCommand())
	root.AddCommand(libvirtCommands()...)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: exitUsage, err: err, help: true}
	})
	return root
}

// execute runs the command line args and returns the exit status. An
// error not yet printed is printed here, a usage error with where to find
// help.
func execute(args []string) int {
	root := newRootCommand()
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitOK
	}
	// cobra's own errors (an unknown command or flag) are usage errors.
	code, help := exitUsage, true
	var ee *exitError
	if errors.As(err, &ee) {
		code, help, err = ee.code, ee.help, ee.err
	}
	if err != nil {
		msg := err.Error()
		if cmd == root && len(args) > 0 {
			msg += withoutCgo(args[0])
		}
		errorLine(root.ErrOrStderr(), "", msg)
		if help {
			fmt.Fprintf(root.ErrOrStderr(), "Run '%s --help' for usage.\n", cmd.CommandPath())
		}
	}
	return code
}

// libvirtCommandNames are the names of libvirtCommands' subcommands, which
// a build without cgo lacks and explains (withoutCgo);
// TestLibvirtCommandNames keeps the two lists together.
var libvirtCommandNames = []string{"run", "apply", "status", "stop", "delete", "console", "vnc", "host", "migrate"}

// exactArgs accepts exactly n arguments, named names in the message.
func exactArgs(n int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usageErrorf("%s takes %s, got %d argument(s)", cmd.CommandPath(), names, len(args))
		}
		return nil
	}
}

// version is the module version the binary was built from ("(devel)" in
// a work tree).
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		return bi.Main.Version
	}
	return "unknown"
}
