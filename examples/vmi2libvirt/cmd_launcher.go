//go:build cgo

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/imagestore"
	"github.com/vmi2libvirt/vmi2libvirt/internal/cmdutil"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

// launcherFlags say which libvirt and which launcher the subcommands that
// drive libvirt use. status, stop and delete find the VMIs run by the
// same --owner (default: the host's name) in the same --state-dir.
type launcherFlags struct {
	uri, owner string
	host       hostFlags
	verbose    bool
}

func (f *launcherFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.uri, "uri", launcher.DefaultURI, "libvirt connection URI")
	fs.StringVar(&f.owner, "owner", "", "the launcher's name, recorded in the domains it defines; it sees only its own (default: the host's name)")
	fs.BoolVarP(&f.verbose, "verbose", "v", false, "log each of the launcher's steps on standard error, with its time (warnings are always logged)")
	f.host.register(fs)
}

// open connects a launcher as the flags say; emulate forces domain type
// qemu for the VMIs it starts.
func (f *launcherFlags) open(ctx context.Context, errOut io.Writer, emulate bool) (*launcher.Launcher, error) {
	cfg := launcher.Config{
		URI:     f.uri,
		Owner:   f.owner,
		Emulate: emulate,
		Layout:  f.host.layout(),
		Logger:  cmdutil.Logger(errOut, f.verbose),
	}
	cfg.Images.Progress = func(p imagestore.Progress) {
		state := "pulling"
		if p.Finished {
			state = "pulled"
		}
		fmt.Fprintf(errOut, "%s %s: %.1f of %.1f MB\n", state, p.Image, float64(p.Done)/1e6, float64(p.Total)/1e6)
	}
	l, err := launcher.New(ctx, cfg)
	if err != nil {
		return nil, launcherError(err)
	}
	return l, nil
}

// run opens a launcher as the flags say (emulate forces domain type qemu
// for the VMIs it starts), runs fn with it and a context the first Ctrl-C
// ends, and closes it.
func (f *launcherFlags) run(cmd *cobra.Command, emulate bool, fn func(ctx context.Context, l *launcher.Launcher) error) error {
	ctx, cancel := interruptible(cmd.Context())
	defer cancel()
	l, err := f.open(ctx, cmd.ErrOrStderr(), emulate)
	if err != nil {
		return err
	}
	defer l.Close()
	return fn(ctx, l)
}

// interruptible is ctx, ended by the first Ctrl-C (or SIGTERM) so that a
// launcher's call returns and the launcher closes; a second one kills the
// command.
func interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop()
	}()
	return ctx, stop
}

// launcherError gives a launcher's error its exit code: a VMI refused is
// invalid input, one that has no domain a usage error (the name is wrong),
// anything else the host's.
func launcherError(err error) error {
	code := exitHost
	switch {
	case err == nil:
		return nil
	case errors.Is(err, launcher.ErrInvalid):
		code = exitInvalid
	case errors.Is(err, launcher.ErrNoDomain):
		code = exitUsage
	case errors.Is(err, context.Canceled):
		err = fmt.Errorf("interrupted: %w", err)
	}
	return &exitError{code: code, err: err}
}

// vmiFlags name a VMI the launcher runs: NAME and -n NAMESPACE.
type vmiFlags struct {
	namespace string
}

func (f *vmiFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.namespace, "namespace", "n", "default", "the VMI's namespace")
}

// vmi is the VMI called name, as the launcher's calls need it.
func (f *vmiFlags) vmi(name string) *v1.VirtualMachineInstance {
	vmi := &v1.VirtualMachineInstance{}
	vmi.APIVersion, vmi.Kind = api.APIVersion, api.KindVMI
	vmi.Namespace, vmi.Name = f.namespace, name
	return vmi
}

// notFound is the error for a VMI the launcher does not run.
func notFound(l *launcher.Launcher, vmi *v1.VirtualMachineInstance) error {
	return &exitError{code: exitUsage, err: fmt.Errorf("no VMI %s/%s on this host for owner %q", vmi.Namespace, vmi.Name, l.Owner())}
}

// find returns the VMI called vmi's namespace and name among those the
// launcher owns, with its status; nil when it owns none of that name.
func find(ctx context.Context, l *launcher.Launcher, vmi *v1.VirtualMachineInstance) (*v1.VirtualMachineInstance, error) {
	all, err := l.List(ctx)
	if err != nil {
		return nil, launcherError(err)
	}
	for _, v := range all {
		if v.Namespace == vmi.Namespace && v.Name == vmi.Name {
			return v, nil
		}
	}
	return nil, nil
}

// completeNames completes NAME with the VMIs the launcher owns in the
// namespace given.
func completeNames(lf *launcherFlags, vf *vmiFlags) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
		defer cancel()
		l, err := lf.open(ctx, io.Discard, false)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		defer l.Close()
		all, err := l.List(ctx)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var names []cobra.Completion
		for _, v := range all {
			if v.Namespace == vf.namespace {
				names = append(names, cobra.CompletionWithDesc(v.Name, string(v.Status.Phase)))
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// inDocument gives the field errors of a launcher's *InvalidError the
// paths of the document the VMI came from (spec.template.spec.… for a
// VirtualMachine).
func inDocument(doc api.Document, err error) error {
	var invalid *pipeline.InvalidError
	if !errors.As(err, &invalid) || len(invalid.Errors) == 0 || doc.Kind == api.KindVMI {
		return err
	}
	return doc.Invalid(invalid.Stage, invalid.Errors)
}
