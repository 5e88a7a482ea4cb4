//go:build cgo

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/internal/cmdutil"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
)

func newConsoleCommand() *cobra.Command {
	var (
		lf    launcherFlags
		vf    vmiFlags
		force bool
	)
	cmd := &cobra.Command{
		Use:   "console NAME [-n NAMESPACE] [--force]",
		Short: "Attach the terminal to a running VMI's serial console (Ctrl-] detaches)",
		Long: `Connect the terminal to the serial console of the VMI called NAME, as virtctl
console does: what you type goes to the guest (Ctrl-C included: the terminal is in
raw mode), what the guest writes comes back. Ctrl-] detaches; the VMI keeps running.
Its serial log keeps being written while you are attached.

One attachment at a time per VMI: another gets an error saying the console is
busy, unless --force takes it over from an attachment of the same process.`,
		Example:           `  vmi2libvirt console tiny`,
		Args:              exactArgs(1, "NAME"),
		ValidArgsFunction: completeNames(&lf, &vf),
		RunE: func(cmd *cobra.Command, args []string) error {
			return lf.run(cmd, false, func(ctx context.Context, l *launcher.Launcher) error {
				vmi := vf.vmi(args[0])
				return attach(ctx, cmd, l, vmi, force)
			})
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "take the console over from another attachment of this process")
	vf.register(cmd)
	lf.register(cmd)
	return cmd
}

// attach connects the terminal to vmi's serial console until Ctrl-], the
// guest's QEMU exiting, or an interrupt.
func attach(ctx context.Context, cmd *cobra.Command, l *launcher.Launcher, vmi *v1.VirtualMachineInstance, force bool) error {
	c, err := l.Console(ctx, vmi, launcher.ConsoleOptions{Force: force})
	if err != nil {
		if errors.Is(err, launcher.ErrNoDomain) {
			return notFound(l, vmi)
		}
		return launcherError(err)
	}
	key := vmi.Namespace + "/" + vmi.Name
	fmt.Fprintf(cmd.ErrOrStderr(), "connected to the console of %s; Ctrl-] detaches\n", key)
	in, _ := cmd.InOrStdin().(*os.File)
	if in == nil {
		in = os.Stdin
	}
	end, err := cmdutil.Attach(ctx, c, in, cmd.OutOrStdout())
	switch end {
	case cmdutil.Detached:
		fmt.Fprintf(cmd.ErrOrStderr(), "detached from the console of %s; it keeps running\n", key)
	case cmdutil.ConsoleClosed:
		if err != nil && !errors.Is(err, io.EOF) {
			return launcherError(fmt.Errorf("the console of %s failed: %w", key, err))
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "the console of %s closed: its QEMU exited\n", key)
	}
	return nil
}
