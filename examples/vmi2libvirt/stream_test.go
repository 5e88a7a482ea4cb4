package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// TestSplitDocuments: a stream is cut at YAML's document markers only,
// documents of blanks and comments are not counted, and each document
// keeps the line it starts on.
func TestSplitDocuments(t *testing.T) {
	type doc struct {
		line int
		data string
	}
	for _, c := range []struct {
		name, in string
		want     []doc
	}{
		{"one", "a: 1\nb: 2\n", []doc{{1, "a: 1\nb: 2\n"}}},
		{"leading marker", "---\na: 1\n", []doc{{2, "a: 1\n"}}},
		{"two", "a: 1\n---\nb: 2\n", []doc{{1, "a: 1\n"}, {3, "b: 2\n"}}},
		{"comment after marker", "a: 1\n--- # next\nb: 2\n", []doc{{1, "a: 1\n"}, {3, "b: 2\n"}}},
		{"blank and comment documents", "# head\n---\n\n# only a comment\n---\na: 1\n---\n", []doc{{6, "a: 1\n"}}},
		{"end marker", "a: 1\n...\n---\nb: 2\n", []doc{{1, "a: 1\n"}, {4, "b: 2\n"}}},
		{"CRLF", "a: 1\r\n---\r\nb: 2\r\n", []doc{{1, "a: 1\r\n"}, {3, "b: 2\r\n"}}},
		{"no newline at the end", "a: 1\n---\nb: 2", []doc{{1, "a: 1\n"}, {3, "b: 2"}}},
		{"content after ---", "a: 1\n--- {b: 2}\nc: 3\n", []doc{{1, "a: 1\n"}, {2, "    {b: 2}\nc: 3\n"}}},
		{"not markers", "a: |\n  ---\n----\n---x\n... x\n", []doc{{1, "a: |\n  ---\n----\n---x\n... x\n"}}},
		{"indented marker is content", "a:\n - x\n ---\n", []doc{{1, "a:\n - x\n ---\n"}}},
		{"empty", "", []doc{{1, ""}}},
		{"only comments", "# x\n---\n# y\n", []doc{{1, "# x\n---\n# y\n"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			docs := splitDocuments("f.yaml", []byte(c.in))
			var got []doc
			for i, d := range docs {
				got = append(got, doc{d.line, string(d.data)})
				if d.file != "f.yaml" || d.index != i+1 || d.count != len(docs) {
					t.Errorf("document %d: file %q, index %d, count %d", i, d.file, d.index, d.count)
				}
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("split %q:\n got %+v\nwant %+v", c.in, got, c.want)
			}
		})
	}
}

// FuzzSplitDocuments: for any input, every document is the text of the
// input from its line on (the marker of a "--- content" line blanked),
// holds no marker line, and is not blank — unless it is the only one.
func FuzzSplitDocuments(f *testing.F) {
	for _, s := range []string{"a: 1\n---\nb: 2\n", "--- {a: 1}\n...\n# c\n", "\r\n---\r\n...\n", "---\n---\n", invalidStream} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		docs := splitDocuments("f", in)
		if len(docs) == 0 {
			t.Fatal("no document")
		}
		lines := bytes.SplitAfter(in, []byte("\n"))
		for _, d := range docs {
			if d.line < 1 || d.line > len(lines) && !(len(in) == 0 && d.line == 1) {
				t.Fatalf("document at line %d of %d", d.line, len(lines))
			}
			rest := bytes.Join(lines[min(d.line-1, len(lines)):], nil)
			data := d.data
			if bytes.HasPrefix(rest, []byte("---")) && !bytes.HasPrefix(data, []byte("---")) {
				data = append([]byte("---"), data[3:]...)
			}
			if !bytes.HasPrefix(rest, data) {
				t.Fatalf("document at line %d is not the input's text from there:\n%q\n%q", d.line, d.data, rest)
			}
			if len(docs) == 1 {
				continue
			}
			if blank(d.data) {
				t.Fatalf("blank document %q", d.data)
			}
			for i, l := range bytes.SplitAfter(d.data, []byte("\n")) {
				if marker, _ := documentMarker(l); marker && !(i == 0 && strings.HasPrefix(string(l), "   ")) {
					t.Fatalf("document %q holds the marker line %q", d.data, l)
				}
			}
		}
	})
}
