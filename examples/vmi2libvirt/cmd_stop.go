//go:build cgo

package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/vmi2libvirt/vmi2libvirt/internal/cmdutil"

	"github.com/spf13/cobra"

	"github.com/vmi2libvirt/vmi2libvirt/launcher"
)

func newStopCommand() *cobra.Command {
	var (
		lf launcherFlags
		vf vmiFlags
	)
	cmd := &cobra.Command{
		Use:   "stop NAME [-n NAMESPACE]",
		Short: "Shut a VMI down gracefully and wait until its domain is off",
		Long: `Ask the guest of the VMI called NAME to shut down — through its guest agent, else
with the ACPI power button, as KubeVirt does — and wait until it has powered off.
A guest still running when the VMI's terminationGracePeriodSeconds are over is
destroyed (the VMI then ends Failed, as in KubeVirt). The domain stays defined,
with its final status; delete removes it. A VMI already off is no error.

Interrupted (Ctrl-C), the shutdown goes on in the guest and its deadline is kept
in the domain: stop again waits for it, and destroys the guest if the deadline
has passed.`,
		Example:           `  vmi2libvirt stop tiny && vmi2libvirt delete tiny`,
		Args:              exactArgs(1, "NAME"),
		ValidArgsFunction: completeNames(&lf, &vf),
		RunE: func(cmd *cobra.Command, args []string) error {
			return lf.run(cmd, false, func(ctx context.Context, l *launcher.Launcher) error {
				vmi := vf.vmi(args[0])
				if err := l.Stop(ctx, vmi); err != nil {
					if errors.Is(err, launcher.ErrNoDomain) {
						return notFound(l, vmi)
					}
					return launcherError(err)
				}
				st, err := l.Status(ctx, vmi)
				if err != nil {
					return launcherError(err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s/%s %s\n", vmi.Namespace, vmi.Name, cmdutil.StatusLine(st))
				return nil
			})
		},
	}
	vf.register(cmd)
	lf.register(cmd)
	return cmd
}
