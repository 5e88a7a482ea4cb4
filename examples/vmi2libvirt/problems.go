package main

import (
	"errors"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

// problem is one thing wrong with one input document: where it is and
// what. validate -o json prints a list of them; every command prints them
// on stderr as lines of the one error format (see String).
type problem struct {
	// File names the input ("<stdin>" for -); Document is the document's
	// position in it, from 1.
	File     string `json:"file"`
	Document int    `json:"document"`
	// Line is where the field is written in File, or where the document
	// starts when the problem has no field or the field is not written.
	Line int `json:"line"`
	// Stage is where the pipeline refused the document: decode, validate
	// or convert (pipeline.InvalidError.Stage).
	Stage string `json:"stage,omitempty"`
	// Path is the field's path in the document; empty for a problem of the
	// whole document.
	Path string `json:"path,omitempty"`
	// Type is the field error's machine-readable type, as Kubernetes
	// reports it (FieldValueInvalid, FieldValueRequired…).
	Type string `json:"type,omitempty"`
	// Message says what is wrong, without the path.
	Message string `json:"message"`

	doc document
}

// String is the problem as an error line says it:
// "FILE:LINE (document N of M): PATH: MESSAGE".
func (p problem) String() string {
	s := p.doc.where(p.Line)
	if p.Path != "" {
		s += ": " + p.Path
	}
	return s + ": " + oneLine(p.Message)
}

// problemsOf lists what err, the pipeline's (or the decoder's or the
// launcher's) error for doc, says is wrong: one problem per field error,
// or one for the whole document.
func problemsOf(doc document, err error) []problem {
	base := problem{File: doc.file, Document: doc.index, Line: doc.line, doc: doc}
	var stage string
	var errs field.ErrorList
	var invalid *pipeline.InvalidError
	if errors.As(err, &invalid) {
		stage, errs = invalid.Stage, invalid.Errors
	}
	base.Stage = stage
	if len(errs) == 0 {
		base.Message = err.Error()
		return []problem{base}
	}
	out := make([]problem, 0, len(errs))
	for _, fe := range errs {
		p := base
		p.Path, p.Type, p.Message = fe.Field, string(fe.Type), fieldMessage(stage, fe)
		if l := fieldLine(doc.data, fe.Field); l > 0 {
			p.Line = doc.line + l - 1
		}
		out = append(out, p)
	}
	return out
}

// fieldMessage is what a field error says, without its path, in the words
// the pipeline's own message uses (the decoder words some errors its own
// way: "unknown field").
func fieldMessage(stage string, fe *field.Error) string {
	msg := (&pipeline.InvalidError{Stage: stage, Errors: field.ErrorList{fe}}).Error()
	return strings.TrimPrefix(msg, fe.Field+": ")
}

// oneLine folds a message onto one line: its lines, trimmed, blank ones
// dropped, joined by spaces.
func oneLine(s string) string {
	var parts []string
	for _, line := range strings.Split(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			parts = append(parts, line)
		}
	}
	return strings.Join(parts, " ")
}
