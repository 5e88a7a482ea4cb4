//go:build cgo

package main

import (
	"context"
	"fmt"

	"github.com/vmi2libvirt/vmi2libvirt/internal/cmdutil"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"

	"github.com/spf13/cobra"

	"github.com/vmi2libvirt/vmi2libvirt/api"
)

func newRunCommand() *cobra.Command {
	var (
		lf                       launcherFlags
		namespace                string
		emulate, dryRun, console bool
	)
	cmd := &cobra.Command{
		Use:   "run FILE [--emulate] [--dry-run] [--console]",
		Short: "Run a VMI on libvirt: plan, make its files, define and start its domain",
		Long: `Run the VMI (or VirtualMachine) in FILE (- for standard input) on libvirt: its images
are pulled into the image store, its host files made in its state folder, its domain
defined and started once, and its status printed as one line. The VMI keeps running
after the command returns; status, stop and delete act on it by name. Running a
VMI that runs already changes nothing; one that ran to its end is not started
again (delete it first).

With --console, attach the terminal to the VMI's serial console once it runs, as
the console subcommand does (Ctrl-] detaches; the VMI keeps running).

With --dry-run, print the domain XML the launcher would define on this host (its
plan: this host's firmware, domain type, layout and the launcher's metadata) and
write nothing.`,
		Example: `  # Under emulation (no KVM), then stop and remove it
  vmi2libvirt run --emulate examples/vmis/vmi-tiny.yaml
  vmi2libvirt status tiny
  vmi2libvirt stop tiny && vmi2libvirt delete tiny

  # Run it and log in on its serial console
  vmi2libvirt run --emulate --console examples/vmis/vmi-tiny.yaml

  # The domain it would define, nothing written
  vmi2libvirt run --dry-run --emulate vmi.yaml`,
		Args: exactArgs(1, "FILE"),
		RunE: func(cmd *cobra.Command, args []string) error {
			doc, decoded, fail, err := oneVMI(cmd, args[0], namespace, "run")
			if err != nil {
				return err
			}
			vmi := decoded.VMI
			return lf.run(cmd, emulate, func(ctx context.Context, l *launcher.Launcher) error {
				if dryRun {
					plan, err := l.Plan(ctx, vmi)
					if err != nil {
						return launcherFailure(fail, doc, decoded, err)
					}
					_, err = cmd.OutOrStdout().Write(plan.XML)
					return err
				}
				if err := l.Sync(ctx, vmi); err != nil {
					return launcherFailure(fail, doc, decoded, err)
				}
				st, err := l.Status(ctx, vmi)
				if err != nil {
					return launcherError(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s/%s %s\n", vmi.Namespace, vmi.Name, cmdutil.StatusLine(st))
				if console {
					return attach(ctx, cmd, l, vmi, false)
				}
				return nil
			})
		},
	}
	fs := cmd.Flags()
	fs.BoolVar(&emulate, "emulate", false, "run the guest under emulation (domain type qemu) even where KVM is available")
	fs.BoolVar(&dryRun, "dry-run", false, "print the domain XML the launcher would define on this host, and write nothing")
	fs.BoolVar(&console, "console", false, "attach the terminal to the VMI's serial console once it runs (Ctrl-] detaches)")
	fs.StringVarP(&namespace, "namespace", "n", "default", "the VMI's namespace, when FILE names none")
	lf.register(cmd)
	return cmd
}

// launcherFailure reports a launcher's error for the VMI of doc: each
// problem of a VMI refused, at its place in the document; any other error
// as it is.
func launcherFailure(fail *failures, doc document, decoded api.Document, err error) error {
	err = launcherError(inDocument(decoded, err))
	if codeOf(err) == exitInvalid {
		fail.problems(problemsOf(doc, err), exitInvalid)
		return fail.err()
	}
	return err
}
