//go:build cgo

package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/vmi2libvirt/vmi2libvirt/internal/cmdutil"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"

	"github.com/spf13/cobra"
)

func newStatusCommand() *cobra.Command {
	var (
		lf     launcherFlags
		vf     vmiFlags
		format string
	)
	cmd := &cobra.Command{
		Use:   "status NAME [-n NAMESPACE] [-o text|json]",
		Short: "Print the status of a VMI the launcher runs",
		Long: `Print the status of the VMI called NAME, as libvirt knows it now: its phase by
KubeVirt's rules, the conditions Ready, Paused and AgentConnected, its interfaces,
the guest OS (where the guest agent answers) and the machine type.

-o text prints one line of key=value pairs, the phase first:
  phase=Running ready=True machine=pc-q35-7.2 iface=default/52:54:00:12:34:56
-o json prints the VMI's status as KubeVirt's API writes it
(VirtualMachineInstanceStatus: "phase", "conditions", "interfaces", ...).`,
		Example: `  vmi2libvirt status tiny
  vmi2libvirt status tiny -o json | jq -r .phase`,
		Args:              exactArgs(1, "NAME"),
		ValidArgsFunction: completeNames(&lf, &vf),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != formatText && format != formatJSON {
				return usageErrorf("-o %q: want %s or %s", format, formatText, formatJSON)
			}
			return lf.run(cmd, false, func(ctx context.Context, l *launcher.Launcher) error {
				want := vf.vmi(args[0])
				vmi, err := find(ctx, l, want)
				if err != nil {
					return err
				}
				if vmi == nil {
					// Not ours: Status says whether another launcher owns it.
					if _, err := l.Status(ctx, want); err != nil {
						return launcherError(err)
					}
					return notFound(l, want)
				}
				if format == formatJSON {
					enc := json.NewEncoder(cmd.OutOrStdout())
					enc.SetIndent("", "  ")
					return enc.Encode(vmi.Status)
				}
				fmt.Fprintln(cmd.OutOrStdout(), cmdutil.StatusLine(vmi.Status))
				return nil
			})
		},
	}
	cmd.Flags().StringVarP(&format, "output", "o", formatText, "text (one line) or json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{formatText, formatJSON}, cobra.ShellCompDirectiveNoFileComp))
	vf.register(cmd)
	lf.register(cmd)
	return cmd
}
