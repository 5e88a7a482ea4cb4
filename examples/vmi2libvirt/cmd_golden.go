package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vmi2libvirt/vmi2libvirt/internal/fixtures"
)

// goldenLayout describes a folder of fixtures, for golden's help.
const goldenLayout = `A folder of fixtures pins the domains a set of VMIs produce, so that a CI job fails
when a change (of the VMIs, of their options, or of vmi2libvirt) changes one:

  DIR/<case>/vmi.yaml      a VirtualMachineInstance or VirtualMachine
  DIR/<case>/domain.xml    the domain it must convert to, byte for byte
  DIR/<case>/error.txt     instead, for a VMI that must be refused: the message
  DIR/<case>/options.yaml  optional: layout and host facts (default: KubeVirt's)
  DIR/<case>/README.md     optional notes

It is the layout of vmi2libvirt's own convert/testdata (its README.md documents
options.yaml). DIR may also be a single case folder. A README.md may sit beside
the case folders; names starting with "." are ignored.`

func newGoldenCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "golden",
		Short: "Check or update golden domain fixtures (VMI YAML beside the domain XML it must produce)",
		Long:  goldenLayout,
		Example: `  # In CI: fail, with a field-by-field diff, when a fixture is stale
  vmi2libvirt golden check testdata/domains

  # After a change: rewrite the stale fixtures, then read what changed
  vmi2libvirt golden update testdata/domains && git diff testdata/domains`,
		// Without NoArgs, cobra prints the help of a command that only
		// groups subcommands and exits 0 whatever follows it.
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newGoldenCheckCommand(), newGoldenUpdateCommand())
	return cmd
}

func newGoldenCheckCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "check DIR",
		Short: "Fail when a fixture's domain.xml or error.txt is not what its VMI produces now",
		Long: `Convert every case's vmi.yaml (with its options.yaml) and compare the domain with
its domain.xml or, for a VMI that is refused, the message with its error.txt. Each
stale or broken case is printed on standard output with what differs — field by
field for a domain — and as an error line on standard error; the exit status is
then 1.

` + goldenLayout,
		Example: `  vmi2libvirt golden check testdata/domains`,
		Args:    exactArgs(1, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := fixtures.Check(args[0])
			if err != nil {
				return fixturesError(err)
			}
			return reportFixtures(cmd, out, "check")
		},
	}
}

func newGoldenUpdateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "update DIR",
		Short: "Rewrite each stale fixture's domain.xml or error.txt from its VMI",
		Long: `Convert every case's vmi.yaml and write what it produces: domain.xml, or error.txt
for a VMI that is refused (the other file is removed). Files that are already
right are not written; broken cases are left alone and reported. Read every
change (git diff) before committing it: update believes the converter.

` + goldenLayout,
		Example: `  # A new fixture: write its VMI, let update write its domain
  mkdir -p testdata/domains/web && cp web-vmi.yaml testdata/domains/web/vmi.yaml
  vmi2libvirt golden update testdata/domains
  git diff testdata/domains`,
		Args: exactArgs(1, "DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := fixtures.Update(args[0])
			if err != nil {
				return fixturesError(err)
			}
			return reportFixtures(cmd, out, "update")
		},
	}
}

// fixturesError classes an error of the fixtures folder itself.
func fixturesError(err error) error {
	if errors.Is(err, fixtures.ErrNoCases) {
		return &exitError{code: exitUsage, err: err}
	}
	return fileError(err)
}

// reportFixtures prints what check or update found: each case that is not
// fresh, with its difference, then a count of each state; error lines for
// the stale and broken ones.
func reportFixtures(cmd *cobra.Command, out []fixtures.Outcome, verb string) error {
	w := cmd.OutOrStdout()
	fail := &failures{w: cmd.ErrOrStderr()}
	counts := map[fixtures.State]int{}
	for _, o := range out {
		counts[o.State]++
		switch o.State {
		case fixtures.Updated:
			for _, f := range o.Changed {
				fmt.Fprintf(w, "updated %s\n", f)
			}
		case fixtures.Stale, fixtures.Broken:
			fmt.Fprintf(w, "%s %s: %s\n", strings.ToUpper(o.State.String()), o.Dir, o.Problem)
			if o.Diff != "" {
				indent(w, o.Diff)
			}
			hint := ""
			if o.State == fixtures.Stale {
				hint = " (vmi2libvirt golden update " + o.Dir + " rewrites it)"
			}
			fail.add(o.Dir, &exitError{code: exitInvalid, err: fmt.Errorf("%s fixture: %s%s", o.State, o.Problem, hint)})
		}
	}
	var parts []string
	for _, s := range []fixtures.State{fixtures.Fresh, fixtures.Updated, fixtures.Stale, fixtures.Broken} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	noun := "fixtures"
	if len(out) == 1 {
		noun = "fixture"
	}
	fmt.Fprintf(w, "golden %s: %d %s: %s\n", verb, len(out), noun, strings.Join(parts, ", "))
	return fail.err()
}

// indent prints text with each line indented by four spaces.
func indent(w io.Writer, text string) {
	for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		fmt.Fprintf(w, "    %s\n", line)
	}
}
