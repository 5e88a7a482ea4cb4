package domain

import (
	"math/bits"
	"strconv"
	"unicode/utf8"

	"libvirt.org/go/libvirtxml"
)

//go:generate go run ./internal/xmlgen -o xmlwrite_gen.go

// The domain writer: Marshal's fast path.
//
// libvirtxml marshals a domain with encoding/xml, which looks every field
// of every struct up by reflection and checks it for marshalling
// interfaces; for a converted domain that is most of the time the pipeline
// takes. xmlWriter writes the same bytes with plain code instead:
//
//   - xmlwrite_gen.go is generated (go generate ./domain) by
//     internal/xmlgen from the struct tags of the libvirtxml types the
//     converter fills in (internal/xmlgen/types.go): for each type, one
//     method writing its attributes, one writing its children and, unless
//     libvirtxml has its own MarshalXML for it, one writing it as an element.
//   - xmlwrite_custom.go writes by hand, the way their MarshalXML methods
//     do, the types libvirtxml marshals itself (a disk's type attribute from
//     its source, a PCI address in hexadecimal, a controller's fields by
//     type, ...), for the variants the converter uses.
//   - this file holds the writer: indentation, escaping and number
//     formatting as encoding/xml's MarshalIndent(d, "", "  ") does them.
//
// Anything the writer does not write itself (a field of a type outside the
// table, a variant of a custom type the converter never makes, raw
// metadata) marks the writer as failed, and Marshal marshals that domain
// with libvirtxml instead: the fallback is decided field by field, never
// guessed. FuzzWriter (xmlwrite_test.go) checks that both give the same
// bytes on converted domains and on domains with fields set at random.

// The writer has a method for each kind of value the generated code
// writes today (strings and integers as attributes, text or elements); a
// libvirtxml type whose fields need another kind makes go generate's
// output fail to build until the method is added here.

// xmlWriter appends indented XML to buf as encoding/xml's printer does with
// an indent of two spaces.
type xmlWriter struct {
	buf        []byte
	depth      int
	indentedIn bool
	// failed is set when the domain has something the writer does not
	// write; the output is then discarded.
	failed bool
}

// writeDomain returns the XML of d as libvirtxml's Marshal gives it, and
// false when d holds something the writer leaves to libvirtxml.
func writeDomain(d *libvirtxml.Domain, buf []byte) ([]byte, bool) {
	w := xmlWriter{buf: buf}
	w.elemDomain("domain", d)
	return w.buf, !w.failed
}

// unhandled marks the domain as one for libvirtxml to marshal.
func (w *xmlWriter) unhandled() { w.failed = true }

// indent starts a new line at the element's depth, except right after the
// start tag of the element an end tag closes (encoding/xml's writeIndent).
func (w *xmlWriter) indent(delta int) {
	if delta < 0 {
		w.depth--
		if w.indentedIn {
			w.indentedIn = false
			return
		}
	}
	if len(w.buf) > 0 {
		w.buf = append(w.buf, '\n')
	}
	for range w.depth {
		w.buf = append(w.buf, "  "...)
	}
	if delta > 0 {
		w.depth++
		w.indentedIn = true
	}
}

// start opens a start tag; its attributes follow, then startEnd.
func (w *xmlWriter) start(name string) {
	w.indent(1)
	w.buf = append(w.buf, '<')
	w.buf = append(w.buf, name...)
}

func (w *xmlWriter) startEnd() { w.buf = append(w.buf, '>') }

func (w *xmlWriter) end(name string) {
	w.indent(-1)
	w.buf = append(w.buf, "</"...)
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, '>')
}

// emptyElem writes an element with attributes written by attrs and no
// content.
func (w *xmlWriter) emptyElem(name string, attrs func()) {
	w.start(name)
	if attrs != nil {
		attrs()
	}
	w.startEnd()
	w.end(name)
}

func (w *xmlWriter) attrName(name string) {
	w.buf = append(w.buf, ' ')
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, `="`...)
}

func (w *xmlWriter) attrString(name, v string) {
	w.attrName(name)
	w.escape(v)
	w.buf = append(w.buf, '"')
}

func (w *xmlWriter) attrInt(name string, v int64) {
	w.attrName(name)
	w.buf = strconv.AppendInt(w.buf, v, 10)
	w.buf = append(w.buf, '"')
}

func (w *xmlWriter) attrUint(name string, v uint64) {
	w.attrName(name)
	w.buf = strconv.AppendUint(w.buf, v, 10)
	w.buf = append(w.buf, '"')
}

// attrHex writes a number in hexadecimal with at least digits digits after
// "0x", as libvirtxml's fmt.Sprintf("0x%0Nx") does.
func (w *xmlWriter) attrHex(name string, v uint64, digits int) {
	w.attrName(name)
	w.buf = appendHex(w.buf, v, digits)
	w.buf = append(w.buf, '"')
}

// appendHex appends v in hexadecimal with at least digits digits after
// "0x".
func appendHex(buf []byte, v uint64, digits int) []byte {
	buf = append(buf, "0x"...)
	for n := max((bits.Len64(v)+3)/4, 1); n < digits; n++ { // v's hex digits
		buf = append(buf, '0')
	}
	return strconv.AppendUint(buf, v, 16)
}

func (w *xmlWriter) textString(s string) { w.escape(s) }
func (w *xmlWriter) textUint(v uint64)   { w.buf = strconv.AppendUint(w.buf, v, 10) }

// simpleString writes an element holding text only.
func (w *xmlWriter) simpleString(name, s string) {
	w.start(name)
	w.startEnd()
	w.escape(s)
	w.end(name)
}

func (w *xmlWriter) simpleUint(name string, v uint64) {
	w.start(name)
	w.startEnd()
	w.textUint(v)
	w.end(name)
}

// escape appends s escaped as encoding/xml's EscapeString does: the five
// markup characters, tab and line breaks as character references, and
// bytes that are not valid UTF-8 or runes outside XML's character range as
// U+FFFD.
func (w *xmlWriter) escape(s string) {
	last := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\'' && c != '&' && c != '<' && c != '>' {
			i++
			continue
		}
		r, width := utf8.DecodeRuneInString(s[i:])
		var esc string
		switch r {
		case '"':
			esc = "&#34;"
		case '\'':
			esc = "&#39;"
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '\t':
			esc = "&#x9;"
		case '\n':
			esc = "&#xA;"
		case '\r':
			esc = "&#xD;"
		default:
			if !inCharacterRange(r) || (r == utf8.RuneError && width == 1) {
				esc = "\uFFFD"
				break
			}
			i += width
			continue
		}
		w.buf = append(w.buf, s[last:i]...)
		w.buf = append(w.buf, esc...)
		i += width
		last = i
	}
	w.buf = append(w.buf, s[last:]...)
}

// inCharacterRange is XML's Char production, as encoding/xml checks it.
func inCharacterRange(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF ||
		r >= 0xE000 && r <= 0xFFFD ||
		r >= 0x10000 && r <= 0x10FFFF
}
