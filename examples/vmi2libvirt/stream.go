package main

import (
	"bytes"
	"fmt"
	"strconv"
)

// document is one YAML or JSON document of an input file.
type document struct {
	// file names the input as the user named it ("<stdin>" for -).
	file string
	// index is the document's position among the file's documents (from
	// 1), count their number; documents holding only blank lines and
	// comments are not counted.
	index, count int
	// line is the line of the file where the document's text starts.
	line int
	data []byte
}

// where names the document for a person: "FILE:LINE", and which document
// it is when the file holds several.
func (d document) where(line int) string {
	s := d.file + ":" + strconv.Itoa(line)
	if d.count > 1 {
		s += fmt.Sprintf(" (document %d of %d)", d.index, d.count)
	}
	return s
}

// splitDocuments splits a YAML stream into its documents at the lines YAML
// reserves for that: "---" or "..." at the start of a line, followed by
// nothing, blanks or a comment. (YAML forbids such a line inside a
// document, even inside a block scalar, so no content is cut.) A "---"
// followed by content starts the next document on that line; the marker
// is blanked out, so line and column numbers of the document stay the
// file's. Documents of blank lines and comments only are dropped; a stream
// without any other gives one document, the whole input, so that the
// decoder says what is wrong with it.
func splitDocuments(file string, data []byte) []document {
	var docs []document
	start, startLine, line := 0, 1, 1
	inline := false // the document starts on a "--- content" line
	flush := func(end int) {
		text := data[start:end]
		if blank(text) {
			return
		}
		if inline {
			text = append([]byte("   "), text[3:]...)
		}
		docs = append(docs, document{file: file, line: startLine, data: text})
	}
	for pos := 0; pos < len(data); line++ {
		next := len(data)
		if i := bytes.IndexByte(data[pos:], '\n'); i >= 0 {
			next = pos + i + 1
		}
		if marker, content := documentMarker(data[pos:next]); marker {
			flush(pos)
			start, startLine, inline = next, line+1, false
			if content {
				start, startLine, inline = pos, line, true
			}
		}
		pos = next
	}
	flush(len(data))
	if len(docs) == 0 {
		docs = []document{{file: file, line: 1, data: data}}
	}
	for i := range docs {
		docs[i].index, docs[i].count = i+1, len(docs)
	}
	return docs
}

// documentMarker tells whether line (with its newline) is a document
// marker, and whether content follows a "---" on it.
func documentMarker(line []byte) (marker, content bool) {
	if len(line) < 3 || !(bytes.HasPrefix(line, []byte("---")) || bytes.HasPrefix(line, []byte("..."))) {
		return false, false
	}
	rest := line[3:]
	if len(rest) > 0 && rest[0] != ' ' && rest[0] != '\t' && rest[0] != '\n' && rest[0] != '\r' {
		return false, false // "----", "---x": content, not a marker
	}
	trimmed := bytes.TrimSpace(rest)
	if len(trimmed) == 0 || trimmed[0] == '#' {
		return true, false
	}
	if line[0] == '.' {
		return false, false // "... x" is not a marker
	}
	return true, true
}

// blank tells whether text holds only blank lines and comments.
func blank(text []byte) bool {
	for len(text) > 0 {
		line := text
		if i := bytes.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = nil
		}
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			return false
		}
	}
	return true
}
