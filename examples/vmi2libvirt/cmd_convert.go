package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

// outputFormats are kubectl's -o values: given to convert -o, which takes
// a folder, they are refused rather than made into a folder of that name.
var outputFormats = []string{"json", "yaml", "yml", "xml", "text", "wide", "name", "jsonpath", "go-template", "custom-columns"}

func newConvertCommand() *cobra.Command {
	var (
		conv   conversionFlags
		files  []string
		outDir string
	)
	cmd := &cobra.Command{
		Use:   "convert [-f FILE|DIR|-]... [-o DIR]",
		Short: "Convert VMIs to libvirt domain XML",
		Long: `Decode each VirtualMachineInstance (or VirtualMachine, whose template becomes the
VMI), apply KubeVirt's admission defaults, validate it and convert it to the libvirt
domain XML KubeVirt's virt-launcher would give it.

Inputs are files, folders (their .yaml, .yml and .json files) and - for standard
input, given with -f or as arguments; a file may hold several documents separated
by ---. One VMI is printed on standard output. Several are written with -o DIR,
one DIR/<namespace>_<name>.xml each (the domain's name), and refused without it.

Every problem of every input is printed on standard error, with the file, line and
field path; the other inputs are converted all the same.`,
		Example: `  # The domain of one VMI, with KubeVirt's paths
  vmi2libvirt convert -f vmi.yaml

  # For a plain libvirt host, from standard input
  cat vmi.yaml | vmi2libvirt convert --layout host -f -

  # Every VMI of a folder and a multi-document file, one XML file each
  vmi2libvirt convert -f vmis/ -f more.yaml -o domains/`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := conv.config(cmd.Flags())
			if err != nil {
				return err
			}
			if isOutputFormat(outDir) {
				return usageErrorf("-o takes a folder to write domain XML into, and %q is an output format: write -o ./%s for a folder of that name", outDir, outDir)
			}
			docs, err := readInputs(append(files, args...), cmd.InOrStdin())
			if err != nil {
				return err
			}
			if outDir == "" && len(docs) > 1 {
				return usageErrorf("%s in the input, and standard output takes one domain: write them to a folder with -o DIR", countDocuments(docs))
			}
			return convertDocuments(cmd, docs, cfg, outDir)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVarP(&files, "filename", "f", nil, "a VMI file, a folder of them, or - for standard input; repeat for more")
	fs.StringVarP(&outDir, "output-dir", "o", "", "write each domain to DIR/<namespace>_<name>.xml (needed for several VMIs)")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	_ = cmd.MarkFlagDirname("output-dir")
	conv.register(cmd)
	return cmd
}

// isOutputFormat tells whether an -o value is one of kubectl's output
// formats ("json", "jsonpath={.x}").
func isOutputFormat(s string) bool {
	name, _, _ := strings.Cut(s, "=")
	return slices.Contains(outputFormats, name)
}

// convertDocuments converts each document: to standard output, or into
// outDir. A document that does not convert is reported and the others go
// on.
func convertDocuments(cmd *cobra.Command, docs []document, cfg pipeline.Config, outDir string) error {
	fail := &failures{w: cmd.ErrOrStderr()}
	written := map[string]document{} // file name → the document it came from
	for _, doc := range docs {
		r, err := pipeline.FromDocument(doc.data, cfg)
		if err != nil {
			fail.problems(problemsOf(doc, err), codeOf(err))
			continue
		}
		if outDir == "" {
			if _, err := cmd.OutOrStdout().Write(r.XML); err != nil {
				return &exitError{code: exitHost, err: err}
			}
			continue
		}
		name := r.Domain.Name + ".xml"
		if first, ok := written[name]; ok {
			fail.add(doc.where(doc.line), &exitError{code: exitInvalid,
				err: fmt.Errorf("the same namespace and name as %s: both would be %s", first.where(first.line), filepath.Join(outDir, name))})
			continue
		}
		written[name] = doc
		if err := os.MkdirAll(outDir, 0o755); err != nil {
			return &exitError{code: exitHost, err: err}
		}
		file := filepath.Join(outDir, name)
		if err := os.WriteFile(file, r.XML, 0o644); err != nil {
			return &exitError{code: exitHost, err: err}
		}
		fmt.Fprintln(cmd.OutOrStdout(), file)
	}
	return fail.err()
}

// countDocuments says how many documents there are, and in how many
// files when more than one.
func countDocuments(docs []document) string {
	files := 0
	for i, d := range docs {
		if i == 0 || docs[i-1].file != d.file {
			files++
		}
	}
	if files > 1 {
		return fmt.Sprintf("%d documents in %d files", len(docs), files)
	}
	return fmt.Sprintf("%d documents", len(docs))
}
