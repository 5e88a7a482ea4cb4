package domain

import (
	"bytes"
	"fmt"
)

// WithMetadata returns the canonical XML of the domain whose canonical XML
// (Marshal's bytes) is doc, with inner as the inner XML of its <metadata>:
// the bytes Marshal gives for that domain with Metadata.XML set to inner, in
// place of any <metadata> doc has. It writes no other byte, so that a
// caller can keep, beside a domain's XML with its metadata, a digest of
// what the domain is without it (the launcher's marks record one), from
// one marshal.
//
// inner is written as it is, as libvirtxml writes a domain's metadata: it
// must be well-formed XML whose elements carry their own namespaces, and it
// must not hold a </metadata> end tag of its own.
func WithMetadata(doc []byte, inner string) ([]byte, error) {
	if !bytes.HasPrefix(doc, []byte("<domain")) {
		return nil, fmt.Errorf("domain: WithMetadata: not a domain's canonical XML")
	}
	element := make([]byte, 0, len("  <metadata></metadata>\n")+len(inner))
	element = append(element, "  <metadata>"...)
	element = append(element, inner...)
	element = append(element, "</metadata>\n"...)

	start, end, err := metadataSpan(doc)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(doc)-(end-start)+len(element))
	out = append(out, doc[:start]...)
	out = append(out, element...)
	return append(out, doc[end:]...), nil
}

// WithoutMetadata returns doc, a domain's canonical XML, without its
// <metadata> element: what Marshal gives for the domain with Metadata nil.
func WithoutMetadata(doc []byte) ([]byte, error) {
	if !bytes.HasPrefix(doc, []byte("<domain")) {
		return nil, fmt.Errorf("domain: WithoutMetadata: not a domain's canonical XML")
	}
	start, end, err := metadataSpan(doc)
	if err != nil {
		return nil, err
	}
	if start == end {
		return doc, nil
	}
	out := make([]byte, 0, len(doc)-(end-start))
	out = append(out, doc[:start]...)
	return append(out, doc[end:]...), nil
}

// metadataHeads are the starts of the lines of <domain>'s children that
// come before <metadata> in libvirtxml's order: name, uuid, genid, title
// and description, each written on a line of its own (their text escapes
// its newlines).
var metadataHeads = [][]byte{[]byte("  <name>"), []byte("  <uuid>"), []byte("  <genid"), []byte("  <title>"), []byte("  <description>")}

// metadataSpan returns where doc's <metadata> line begins and ends, or,
// for a domain without one, where it would go (start == end): after the
// children metadataHeads names.
func metadataSpan(doc []byte) (start, end int, err error) {
	first := bytes.IndexByte(doc, '\n')
	if first < 0 {
		return 0, 0, fmt.Errorf("domain: a domain's canonical XML has more than one line")
	}
	at := first + 1
	for {
		line := doc[at:]
		if bytes.HasPrefix(line, []byte("  <metadata>")) {
			close := bytes.Index(line, []byte("</metadata>\n"))
			if close < 0 {
				return 0, 0, fmt.Errorf("domain: <metadata> without its end tag")
			}
			return at, at + close + len("</metadata>\n"), nil
		}
		if !hasAnyPrefix(line, metadataHeads) {
			return at, at, nil
		}
		next := bytes.IndexByte(line, '\n')
		if next < 0 {
			return at, at, nil
		}
		at += next + 1
	}
}

func hasAnyPrefix(b []byte, prefixes [][]byte) bool {
	for _, p := range prefixes {
		if bytes.HasPrefix(b, p) {
			return true
		}
	}
	return false
}
