//go:build cgo

package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/internal/cmdutil"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
)

func newMigrateCommand() *cobra.Command {
	var (
		lf                                   launcherFlags
		vf                                   vmiFlags
		file, to, toOwner, toState, migraURI string
		emulate                              bool
	)
	cmd := &cobra.Command{
		Use:   "migrate NAME -f FILE --to URI [--to-owner NAME] [--to-state-dir DIR]",
		Short: "Move a running VMI live to another libvirt host",
		Long: `Migrate the VMI called NAME, which this launcher runs, live to the libvirt host at
--to: the target prepares (its plan of the VMI with the image digests this host
pinned, its own state folder), then this host's libvirtd migrates the domain peer
to peer, copying the disks of the state folder incrementally; hostDisks are shared.
Progress is printed as lines on standard output; the command exits 0 once the
target runs the guest, and prints its status line last. A migration that fails or is interrupted
(Ctrl-C aborts it) leaves the guest running here (exit 3).

FILE is the VMI's document as run was given it: the launcher keeps no copy of the
spec, and the target plans from it. The target's launcher runs in this process
and makes its files on this machine: --to is a libvirt host on this machine (such
as one .ci/node.sh starts) or one sharing its file systems. Its owner is
--to-owner (default: the URI's host name), its state folder --to-state-dir
(default: --state-dir's folder named after the target's owner).`,
		Example: `  uri=$(bash .ci/node.sh up node2 | tail -1)
  vmi2libvirt run --emulate examples/vmis/vmi-tiny.yaml
  vmi2libvirt migrate tiny -f examples/vmis/vmi-tiny.yaml --emulate --to "$uri" --to-owner node2
  vmi2libvirt status tiny --uri "$uri" --owner node2 --state-dir /var/lib/vmi2libvirt/vmis.node2`,
		Args: exactArgs(1, "NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" || file == "" {
				return usageErrorf("migrate needs --to URI and -f FILE")
			}
			if toOwner == "" {
				if u, err := url.Parse(to); err == nil && u.Hostname() != "" {
					toOwner = u.Hostname()
				} else {
					return usageErrorf("--to %s names no host: give the target's owner with --to-owner", to)
				}
			}
			if toState == "" {
				toState = filepath.Clean(lf.host.stateDir) + "." + toOwner
			}
			vmi, err := readVMI(cmd, file, vf.namespace)
			if err != nil {
				return err
			}
			if vmi.Name != args[0] {
				return usageErrorf("%s holds the VMI %s, not %s", file, vmi.Name, args[0])
			}
			return lf.run(cmd, emulate, func(ctx context.Context, l *launcher.Launcher) error {
				tf := lf
				tf.uri, tf.owner, tf.host.stateDir = to, toOwner, toState
				t, err := tf.open(ctx, cmd.ErrOrStderr(), emulate)
				if err != nil {
					return err
				}
				defer t.Close()
				out := cmd.OutOrStdout()
				var last launcher.MigrationProgress
				began := time.Now()
				state, err := l.Migrate(ctx, vmi, t, launcher.MigrateOptions{MigrationURI: migraURI, Progress: func(p launcher.MigrationProgress) {
					last = p
					fmt.Fprintf(out, "migrating %s: %.1f of %.1f MB, %.1f MB remaining, iteration %d\n",
						p.Elapsed.Round(100*time.Millisecond), mb(p.DataProcessed), mb(p.DataTotal), mb(p.DataRemaining), p.MemIteration)
				}})
				if err != nil {
					var me *launcher.MigrationError
					if errors.As(err, &me) {
						return &exitError{code: exitHost, err: err}
					}
					return launcherError(err)
				}
				st, err := t.Status(ctx, vmi)
				if err != nil {
					return launcherError(err)
				}
				fmt.Fprintf(out, "migrated to %s in %s (job %s, downtime %s)\n", state.TargetNode, time.Since(began).Round(time.Millisecond), last.Elapsed, last.Downtime)
				fmt.Fprintf(out, "%s/%s %s on %s\n", vmi.Namespace, vmi.Name, cmdutil.StatusLine(st), t.Owner())
				return nil
			})
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&file, "filename", "f", "", "the VMI's document (as given to run)")
	fs.StringVar(&to, "to", "", "the target's libvirt URI (qemu+unix:///system?socket=... for a node of .ci/node.sh)")
	fs.StringVar(&toOwner, "to-owner", "", "the target launcher's owner (default: the host of --to)")
	fs.StringVar(&toState, "to-state-dir", "", "the target's state folder (default: --state-dir.OWNER)")
	fs.StringVar(&migraURI, "migration-uri", launcher.DefaultMigrationURI, "where the migration stream goes to on the target, tcp://HOST")
	fs.BoolVar(&emulate, "emulate", false, "the target plans the guest under emulation (domain type qemu), as run --emulate ran it")
	vf.register(cmd)
	lf.register(cmd)
	return cmd
}

// mb is a byte count in megabytes.
func mb(n uint64) float64 { return float64(n) / 1e6 }

// readVMI reads the one VMI (or VirtualMachine's) document of file, in
// namespace when it names none; its problems are printed at their places.
func readVMI(cmd *cobra.Command, file, namespace string) (*v1.VirtualMachineInstance, error) {
	shown, data, err := readFile(file, cmd.InOrStdin())
	if err != nil {
		return nil, err
	}
	docs := splitDocuments(shown, data)
	if len(docs) != 1 {
		return nil, usageErrorf("%s: %s: one VMI wanted", file, countDocuments(docs))
	}
	decoded, err := api.DecodeDocument(docs[0].data)
	if err != nil {
		fail := &failures{w: cmd.ErrOrStderr()}
		fail.problems(problemsOf(docs[0], err), exitInvalid)
		return nil, fail.err()
	}
	if decoded.VMI.Namespace == "" {
		decoded.VMI.Namespace = namespace
	}
	return decoded.VMI, nil
}
