//go:build cgo

package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/vmi2libvirt/vmi2libvirt/launcher"
)

func newDeleteCommand() *cobra.Command {
	var (
		lf launcherFlags
		vf vmiFlags
	)
	cmd := &cobra.Command{
		Use:   "delete NAME [-n NAMESPACE]",
		Short: "Remove a VMI from the host: destroy and undefine its domain, remove its state folder",
		Long: `Remove the VMI called NAME from the host at once: a running domain is destroyed (use
stop first for a graceful shutdown), the domain is undefined with its NVRAM, and the
VMI's state folder (overlays, cloud-init ISOs, logs) is removed. Images stay in the
image store. A domain that another launcher (--owner) owns is refused and left alone.`,
		Example:           `  vmi2libvirt delete tiny -n default`,
		Args:              exactArgs(1, "NAME"),
		ValidArgsFunction: completeNames(&lf, &vf),
		RunE: func(cmd *cobra.Command, args []string) error {
			return lf.run(cmd, false, func(ctx context.Context, l *launcher.Launcher) error {
				vmi := vf.vmi(args[0])
				found, err := find(ctx, l, vmi)
				if err != nil {
					return err
				}
				// Delete also removes what a VMI without a domain left.
				if err := l.Delete(ctx, vmi); err != nil {
					return launcherError(err)
				}
				if found == nil {
					return notFound(l, vmi)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s/%s deleted\n", vmi.Namespace, vmi.Name)
				return nil
			})
		},
	}
	vf.register(cmd)
	lf.register(cmd)
	return cmd
}
