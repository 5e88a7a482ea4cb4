package main

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

func newDiffCommand() *cobra.Command {
	var conv conversionFlags
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Compare two domains field by field (domain XML, or a VMI converted first)",
		Long: `Compare two libvirt domains by what they mean, field by field: attribute order,
indentation and other spelling of the XML do not count. Each of A and B is a
domain XML file or a VMI (converted with the layout given, as by convert), or - for
standard input (one of them).

The difference is printed as go-cmp prints it: lines starting with "-" are A's,
lines starting with "+" B's, each under the path of the field that differs
(Devices.Disks[0].Target.Bus). Exit status 0 when the domains are equal, 1 when
they differ, as for diff(1).`,
		Example: `  # What a change of the VMI does to its domain
  vmi2libvirt diff testdata/web/domain.xml web-vmi.yaml

  # KubeVirt's domain against ours
  virsh dumpxml default_web | vmi2libvirt diff - web-vmi.yaml`,
		Args: exactArgs(2, "A B"),
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := conv.config(cmd.Flags())
			if err != nil {
				return err
			}
			if args[0] == "-" && args[1] == "-" {
				return usageErrorf("standard input (-) named twice")
			}
			fail := &failures{w: cmd.ErrOrStderr()}
			var doms [2]*libvirtxml.Domain
			for i, name := range args {
				doms[i], err = readDomain(cmd, name, cfg, fail)
				if err != nil {
					return err
				}
			}
			if fail.code != exitOK {
				return fail.err()
			}
			d := domain.Diff(doms[0], doms[1])
			if d == "" {
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "--- %s\n+++ %s\n%s\n", args[0], args[1], strings.TrimRight(d, "\n"))
			return &exitError{code: exitInvalid, err: fmt.Errorf("%s and %s are different domains", args[0], args[1])}
		},
	}
	conv.register(cmd)
	return cmd
}

// readDomain reads the domain named: domain XML as it is, a VMI converted
// with cfg. Problems of the input are reported to fail (and the domain is
// nil); the error is for a file that cannot be read or a usage error.
func readDomain(cmd *cobra.Command, name string, cfg pipeline.Config, fail *failures) (*libvirtxml.Domain, error) {
	file, data, err := readFile(name, cmd.InOrStdin())
	if err != nil {
		return nil, err
	}
	if isXML(data) {
		d, err := domain.Unmarshal(data)
		if err != nil {
			fail.add(file, &exitError{code: exitInvalid, err: fmt.Errorf("not domain XML: %w", err)})
		}
		return d, nil
	}
	docs := splitDocuments(file, data)
	if len(docs) != 1 {
		return nil, usageErrorf("%s: %s: diff compares one domain with one", name, countDocuments(docs))
	}
	doc := docs[0]
	r, err := pipeline.FromDocument(doc.data, cfg)
	if err != nil {
		fail.problems(problemsOf(doc, err), codeOf(err))
	}
	return r.Domain, nil
}

// isXML tells whether data starts as XML does (after blanks): with "<".
func isXML(data []byte) bool {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	data = bytes.TrimLeft(data, " \t\r\n")
	return len(data) > 0 && data[0] == '<'
}
