package main

import (
	"context"
	"fmt"
	"os"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/internal/cmdutil"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
)

// attachConsole connects the terminal to the VMI's serial console until
// the user types Ctrl-], the console ends (the guest's QEMU exited), or
// ctx ends (see cmdutil.Attach); status lines wait meanwhile (see
// statusPrinter). The VMI keeps running when the terminal detaches.
func attachConsole(ctx context.Context, l *launcher.Launcher, vmi *v1.VirtualMachineInstance, status *statusPrinter) error {
	c, err := l.Console(ctx, vmi, launcher.ConsoleOptions{})
	if err != nil {
		return err
	}
	key := vmi.Namespace + "/" + vmi.Name
	fmt.Fprintf(os.Stderr, "launch: connected to the console of %s; Ctrl-] detaches\n", key)
	status.hold()
	defer status.release()
	end, err := cmdutil.Attach(ctx, c, os.Stdin, os.Stdout)
	switch {
	case end == cmdutil.Detached:
		fmt.Fprintln(os.Stderr, "launch: detached from the console of "+key+"; it keeps running (Ctrl-C stops it)")
	case end == cmdutil.ConsoleClosed && err == nil:
		fmt.Fprintln(os.Stderr, "launch: the console of "+key+" closed: its QEMU exited")
	case end == cmdutil.ConsoleClosed:
		fmt.Fprintf(os.Stderr, "launch: the console of %s failed: %v\n", key, err)
	}
	return nil
}
