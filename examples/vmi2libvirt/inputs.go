package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// stdinName names standard input in messages and in validate's JSON.
const stdinName = "<stdin>"

// inputExtensions are the files a folder given as input contributes, as
// for kubectl -f DIR.
var inputExtensions = []string{".yaml", ".yml", ".json"}

// readInputs reads the documents of every input named: a file, "-" for
// standard input (once), or a folder, whose .yaml, .yml and .json files are
// read in name order (not those of its sub-folders). An input that is not
// there is a usage error; one that cannot be read, a host error.
func readInputs(names []string, stdin io.Reader) ([]document, error) {
	if len(names) == 0 {
		return nil, usageErrorf("no input: name files or folders with -f (or as arguments), or - for standard input")
	}
	var docs []document
	readStdin := false
	for _, name := range names {
		if name == "-" {
			if readStdin {
				return nil, usageErrorf("standard input (-) named twice")
			}
			readStdin = true
		}
		files := []string{name}
		if name != "-" {
			var err error
			if files, err = inputFiles(name); err != nil {
				return nil, err
			}
		}
		for _, file := range files {
			shown, data, err := readFile(file, stdin)
			if err != nil {
				return nil, err
			}
			docs = append(docs, splitDocuments(shown, data)...)
		}
	}
	return docs, nil
}

// readFile reads one input file, or standard input for "-", and returns
// the name to show for it.
func readFile(name string, stdin io.Reader) (string, []byte, error) {
	if name == "-" {
		data, err := io.ReadAll(stdin)
		if err != nil {
			return "", nil, &exitError{code: exitHost, err: fmt.Errorf("read standard input: %w", err)}
		}
		return stdinName, data, nil
	}
	if st, err := os.Stat(name); err == nil && st.IsDir() {
		return "", nil, usageErrorf("%s is a folder: a file is needed here", name)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return "", nil, fileError(err)
	}
	return name, data, nil
}

// inputFiles returns name itself for a file, or the input files of a
// folder.
func inputFiles(name string) ([]string, error) {
	st, err := os.Stat(name)
	if err != nil {
		return nil, fileError(err)
	}
	if !st.IsDir() {
		return []string{name}, nil
	}
	entries, err := os.ReadDir(name)
	if err != nil {
		return nil, fileError(err)
	}
	var files []string
	for _, e := range entries {
		if !e.IsDir() && slices.Contains(inputExtensions, strings.ToLower(filepath.Ext(e.Name()))) {
			files = append(files, filepath.Join(name, e.Name()))
		}
	}
	if len(files) == 0 {
		return nil, usageErrorf("%s: no %s file in the folder", name, strings.Join(inputExtensions, ", "))
	}
	return files, nil
}

// fileError classes an error of reading an input: a usage error when it
// is not there, a host error when it cannot be read.
func fileError(err error) error {
	code := exitHost
	if errors.Is(err, fs.ErrNotExist) {
		code = exitUsage
	}
	return &exitError{code: code, err: err}
}
