//go:build cgo

package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/internal/cmdutil"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
)

func newApplyCommand() *cobra.Command {
	var (
		lf        launcherFlags
		namespace string
		file      string
		emulate   bool
	)
	cmd := &cobra.Command{
		Use:   "apply -f FILE [--uri URI] [--owner NAME] [--state-dir DIR]",
		Short: "Change a running VMI to the spec in FILE, live where libvirt can",
		Long: `Sync the VMI in FILE (- for standard input) to its spec, as kubectl apply would: a VMI
that runs gets the changes libvirt makes live — disks on the virtio or scsi bus and
NICs hot-plugged or unplugged, link states, CD-ROM media, vCPUs up to maxSockets —,
in the running domain and in its definition, and each is printed as one line
("applied KIND NAME (FIELD)"). A change a running domain cannot follow is printed
with its field path ("restart-required FIELD: ...", or "host-lacks FIELD: ..." for
what this host's libvirt cannot change at all), and then nothing is changed: the
guest is untouched, and apply exits 1. A VMI that does not run yet is run, as the
run subcommand does.`,
		Example: `  # Add a disk to the spec of a running VMI, then
  vmi2libvirt apply -f vmi.yaml
  vmi2libvirt status tiny -o json | jq .volumeStatus`,
		Args: exactArgs(0, ""),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return usageErrorf("apply needs -f FILE")
			}
			doc, decoded, fail, err := oneVMI(cmd, file, namespace, "apply")
			if err != nil {
				return err
			}
			vmi := decoded.VMI
			return lf.run(cmd, emulate, func(ctx context.Context, l *launcher.Launcher) error {
				live, err := l.LiveChanges(ctx, vmi)
				if err != nil {
					return launcherFailure(fail, doc, decoded, err)
				}
				out := cmd.OutOrStdout()
				if live != nil && !live.Applicable() {
					printRefused(out, live.Restart, "restart-required")
					printRefused(out, live.HostLacks, "host-lacks")
					for _, op := range live.Ops {
						fmt.Fprintf(out, "not-applied %s\n", op)
					}
					return &exitError{code: exitInvalid, err: fmt.Errorf("%s/%s: %d change(s) need a restart of the VMI; nothing was changed",
						vmi.Namespace, vmi.Name, len(live.Restart)+len(live.HostLacks))}
				}
				if err := l.Sync(ctx, vmi); err != nil {
					return launcherFailure(fail, doc, decoded, err)
				}
				switch {
				case live == nil:
					st, err := l.Status(ctx, vmi)
					if err != nil {
						return launcherError(err)
					}
					fmt.Fprintf(out, "%s/%s %s\n", vmi.Namespace, vmi.Name, cmdutil.StatusLine(st))
				case len(live.Ops) == 0:
					fmt.Fprintf(out, "%s/%s unchanged\n", vmi.Namespace, vmi.Name)
				}
				if live != nil {
					for _, op := range live.Ops {
						fmt.Fprintf(out, "applied %s\n", op)
					}
				}
				return nil
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&file, "filename", "f", "", "the VMI's file, or - for standard input")
	fs.BoolVar(&emulate, "emulate", false, "run the guest under emulation (domain type qemu) even where KVM is available, if it is started")
	fs.StringVarP(&namespace, "namespace", "n", "default", "the VMI's namespace, when FILE names none")
	lf.register(cmd)
	return cmd
}

// printRefused prints one line per field error, its kind first.
func printRefused(w io.Writer, errs field.ErrorList, kind string) {
	for _, fe := range errs {
		fmt.Fprintf(w, "%s %s: %s\n", kind, fe.Field, fe.Detail)
	}
}

// oneVMI reads the one VMI of the file at path (- for standard input) for
// the command verb, in namespace when it names none (a namespace given
// with -n that differs from the file's is a usage error).
func oneVMI(cmd *cobra.Command, path, namespace, verb string) (document, api.Document, *failures, error) {
	file, data, err := readFile(path, cmd.InOrStdin())
	if err != nil {
		return document{}, api.Document{}, nil, err
	}
	docs := splitDocuments(file, data)
	if len(docs) != 1 {
		return document{}, api.Document{}, nil, usageErrorf("%s: %s: %s takes one VMI", path, countDocuments(docs), verb)
	}
	doc := docs[0]
	fail := &failures{w: cmd.ErrOrStderr()}
	decoded, err := api.DecodeDocument(doc.data)
	if err != nil {
		fail.problems(problemsOf(doc, err), exitInvalid)
		return doc, decoded, fail, fail.err()
	}
	vmi := decoded.VMI
	switch {
	case vmi.Namespace == "":
		vmi.Namespace = namespace
	case cmd.Flags().Changed("namespace") && vmi.Namespace != namespace:
		return doc, decoded, fail, usageErrorf("-n %s, but %s says namespace %s", namespace, doc.where(doc.line), vmi.Namespace)
	}
	return doc, decoded, fail, nil
}
