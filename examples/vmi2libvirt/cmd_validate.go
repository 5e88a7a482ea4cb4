package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

// Output formats of validate and status.
const (
	formatText = "text"
	formatJSON = "json"
)

// validation is what validate -o json prints: every document read and
// every problem found.
type validation struct {
	// Valid is true when every document converts.
	Valid     bool             `json:"valid"`
	Documents []validatedInput `json:"documents"`
	// Problems lists every problem of every document, in input order.
	Problems []problem `json:"problems"`
}

// validatedInput is one document validate read.
type validatedInput struct {
	File     string `json:"file"`
	Document int    `json:"document"`
	Line     int    `json:"line"`
	// Kind, Namespace and Name are those of the VMI, when the document
	// decodes.
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Valid     bool   `json:"valid"`
}

func newValidateCommand() *cobra.Command {
	var (
		conv   conversionFlags
		files  []string
		format string
	)
	cmd := &cobra.Command{
		Use:   "validate [-f FILE|DIR|-]... [-o text|json]",
		Short: "Report every problem of VMIs, with file, line and field path",
		Long: `Run each VMI through the whole pipeline (decode, KubeVirt's defaults, validation,
conversion with the layout given) and report every problem of every input: the
file, the document's position in it, the line, the field path and what is wrong.
Nothing is written. Inputs are read as by convert.

With -o json, standard output is one JSON object, for CI annotations:
  {"valid": false,
   "documents": [{"file", "document", "line", "kind", "namespace", "name", "valid"}],
   "problems": [{"file", "document", "line", "stage", "path", "type", "message"}]}
"document" counts from 1; "line" is where the field is written (or where the
document starts); "stage" is decode, validate or convert; "type" is the Kubernetes
field error type (FieldValueInvalid, FieldValueRequired, ...). The problems are
also printed on standard error, as with -o text.`,
		Example: `  # Check a folder of VMIs
  vmi2libvirt validate -f vmis/

  # GitHub Actions annotations, one per problem
  vmi2libvirt validate -o json -f vmis/ | jq -r '.problems[] | "::error file=\(.file),line=\(.line)::\(.path): \(.message)"'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != formatText && format != formatJSON {
				return usageErrorf("-o %q: want %s or %s", format, formatText, formatJSON)
			}
			cfg, err := conv.config(cmd.Flags())
			if err != nil {
				return err
			}
			docs, err := readInputs(append(files, args...), cmd.InOrStdin())
			if err != nil {
				return err
			}
			return validateDocuments(cmd, docs, cfg, format)
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVarP(&files, "filename", "f", nil, "a VMI file, a folder of them, or - for standard input; repeat for more")
	fs.StringVarP(&format, "output", "o", formatText, "text (one line per document on standard output) or json")
	_ = cmd.MarkFlagFilename("filename", "yaml", "yml", "json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{formatText, formatJSON}, cobra.ShellCompDirectiveNoFileComp))
	conv.register(cmd)
	return cmd
}

// validateDocuments runs the pipeline on each document and reports what
// it finds, as text or JSON on standard output and as error lines on
// standard error.
func validateDocuments(cmd *cobra.Command, docs []document, cfg pipeline.Config, format string) error {
	fail := &failures{w: cmd.ErrOrStderr()}
	out := validation{Valid: true, Documents: []validatedInput{}, Problems: []problem{}}
	for _, doc := range docs {
		r, err := pipeline.FromDocument(doc.data, cfg)
		in := validatedInput{File: doc.file, Document: doc.index, Line: doc.line, Kind: r.Kind, Valid: err == nil}
		if r.VMI != nil {
			in.Namespace, in.Name = r.VMI.Namespace, r.VMI.Name
		}
		out.Documents = append(out.Documents, in)
		if err != nil {
			ps := problemsOf(doc, err)
			out.Valid = false
			out.Problems = append(out.Problems, ps...)
			fail.problems(ps, codeOf(err))
		}
		if format == formatText {
			state := "valid"
			if err != nil {
				state = "invalid"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %s\n", doc.where(doc.line), describe(in, state))
		}
	}
	if format == formatJSON {
		enc := json.NewEncoder(cmd.OutOrStdout())
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return &exitError{code: exitHost, err: err}
		}
	}
	return fail.err()
}

// describe names a validated document's VMI with its state:
// "VirtualMachineInstance default/tiny: valid".
func describe(in validatedInput, state string) string {
	if in.Name == "" {
		return state
	}
	kind := in.Kind
	if kind == "" {
		kind = "VirtualMachineInstance"
	}
	return fmt.Sprintf("%s %s/%s: %s", kind, in.Namespace, in.Name, state)
}
