package api

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// fastYAMLToJSON is the common case of toJSON's YAML conversion, without
// the YAML library: it reads the block YAML that VMI documents are written
// in (block mappings and sequences, plain and simply quoted scalars, {} and
// [], literal block scalars, single-quoted scalars wrapped over lines,
// comments) and writes the JSON
// yaml.YAMLToJSONStrict writes for it, byte for byte: keys sorted, YAML
// 1.1's booleans and nulls, integers as written, HTML characters escaped.
//
// It gives up (ok false) on anything else — anchors, tags, flow
// collections, folded or indented block scalars, multi-line plain scalars,
// escapes, tabs, non-ASCII text, duplicate keys, scalars that may be
// numbers other than plain integers, any YAML error — and the caller then
// converts with the YAML library, which reports errors. So this never
// decides whether a document is valid, only how fast a plain one is read;
// FuzzFastYAML checks it against the YAML library.
func fastYAMLToJSON(data []byte) (js []byte, ok bool) {
	root, ok := fastYAMLTree(data)
	if !ok {
		return nil, false
	}
	return root.appendJSON(make([]byte, 0, len(data))), true
}

// fastYAMLTree parses what fastYAMLToJSON reads into its tree of nodes
// (the root is a mapping); ok false as there.
func fastYAMLTree(data []byte) (root *yamlNode, ok bool) {
	p := yamlParser{}
	if !p.split(data) {
		return nil, false
	}
	p.skipBlank()
	if p.pos < len(p.lines) && isDocStart(p.lines[p.pos].text) {
		p.pos++
		p.skipBlank()
	}
	if p.pos == len(p.lines) || isSeqItem(p.lines[p.pos].text) {
		return nil, false
	}
	root, ok = p.mapping(p.lines[p.pos].indent)
	if !ok {
		return nil, false
	}
	p.skipBlank()
	if p.pos != len(p.lines) {
		return nil, false
	}
	return root, true
}

// fastLine is one line of the document: its indentation in spaces and the
// rest (for a "- " item rewritten to start at the item's content).
type fastLine struct {
	indent int
	text   string
}

type yamlParser struct {
	lines []fastLine
	pos   int
	// free are nodes not used yet, allocated a batch at a time.
	free []yamlNode
	// keyStack and valStack hold the keys and values of the collections
	// being read, innermost last; a finished collection's are copied to
	// keyArena and valArena, slices allocated a batch at a time.
	keyStack, keyArena []string
	valStack, valArena []*yamlNode
	// open is set when the last line has no line break.
	open bool
}

// split cuts data into lines; false for bytes the fast path does not read
// (tabs, carriage returns, control characters, non-ASCII, directives).
func (p *yamlParser) split(data []byte) bool {
	for _, c := range data {
		if c < 0x20 && c != '\n' || c >= 0x7f {
			return false
		}
	}
	p.open = len(data) > 0 && data[len(data)-1] != '\n'
	p.lines = make([]fastLine, 0, bytes.Count(data, []byte("\n"))+1)
	text := string(data) // one copy; the lines are parts of it
	for len(text) > 0 {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		n := 0
		for n < len(line) && line[n] == ' ' {
			n++
		}
		p.lines = append(p.lines, fastLine{indent: n, text: line[n:]})
	}
	return true
}

// blank tells whether a line holds nothing but spaces or a comment.
func blank(l fastLine) bool { return l.text == "" || l.text[0] == '#' }

func (p *yamlParser) skipBlank() {
	for p.pos < len(p.lines) && blank(p.lines[p.pos]) {
		p.pos++
	}
}

func isDocStart(s string) bool { return strings.TrimRight(s, " ") == "---" }

func isSeqItem(s string) bool { return s == "-" || strings.HasPrefix(s, "- ") }

// yamlNode is a parsed value: an object (keys and vals), an array (vals),
// a string (text, escaped when written) or another scalar (text, its JSON).
type yamlNode struct {
	kind byte // '{', '[', '"' or 's'
	keys []string
	vals []*yamlNode
	text string
}

// node returns a new node of the given kind and text.
func (p *yamlParser) node(kind byte, text string) *yamlNode {
	if len(p.free) == 0 {
		p.free = make([]yamlNode, max(32, len(p.lines)+len(p.lines)/4))
	}
	n := &p.free[0]
	p.free = p.free[1:]
	n.kind, n.text = kind, text
	return n
}

// takeKeys returns a copy of keys (a part of keyStack) from keyArena.
func (p *yamlParser) takeKeys(keys []string) []string {
	if len(keys) == 0 {
		return nil
	}
	if cap(p.keyArena)-len(p.keyArena) < len(keys) {
		p.keyArena = make([]string, 0, max(len(keys), len(p.lines)))
	}
	at := len(p.keyArena)
	p.keyArena = append(p.keyArena, keys...)
	return p.keyArena[at:len(p.keyArena):len(p.keyArena)]
}

// takeVals returns a copy of vals (a part of valStack) from valArena.
func (p *yamlParser) takeVals(vals []*yamlNode) []*yamlNode {
	if len(vals) == 0 {
		return nil
	}
	if cap(p.valArena)-len(p.valArena) < len(vals) {
		p.valArena = make([]*yamlNode, 0, max(len(vals), len(p.lines)+len(p.lines)/4))
	}
	at := len(p.valArena)
	p.valArena = append(p.valArena, vals...)
	return p.valArena[at:len(p.valArena):len(p.valArena)]
}

// mapping reads a block mapping whose keys are at indent.
func (p *yamlParser) mapping(indent int) (*yamlNode, bool) {
	n := p.node('{', "")
	start, vstart := len(p.keyStack), len(p.valStack)
	for {
		p.skipBlank()
		if p.pos == len(p.lines) || p.lines[p.pos].indent < indent {
			n.keys, n.vals = p.takeKeys(p.keyStack[start:]), p.takeVals(p.valStack[vstart:])
			p.keyStack, p.valStack = p.keyStack[:start], p.valStack[:vstart]
			return n, true
		}
		l := p.lines[p.pos]
		if l.indent > indent {
			return nil, false
		}
		k, rest, ok := splitKey(l.text)
		if !ok || slices.Contains(p.keyStack[start:], k) {
			return nil, false
		}
		p.pos++
		var v *yamlNode
		switch {
		case rest == "":
			v, ok = p.nested(indent)
		case rest[0] == '|':
			v, ok = p.literal(indent, rest)
		default:
			v, ok = p.inline(indent, rest)
		}
		if !ok {
			return nil, false
		}
		p.keyStack = append(p.keyStack, k)
		p.valStack = append(p.valStack, v)
	}
}

// nested reads the value of a key written alone on its line: a block
// below it, a sequence at its own indentation, or null.
func (p *yamlParser) nested(indent int) (*yamlNode, bool) {
	p.skipBlank()
	if p.pos == len(p.lines) {
		return p.node('s', "null"), true
	}
	l := p.lines[p.pos]
	switch {
	case l.indent > indent && isSeqItem(l.text):
		return p.sequence(l.indent)
	case l.indent > indent:
		return p.mapping(l.indent)
	case l.indent == indent && isSeqItem(l.text):
		return p.sequence(indent)
	}
	return p.node('s', "null"), true
}

// inline reads a scalar, {} or [] written after a key or dash at indent;
// no line may continue it but a single-quoted scalar's (quotedLines).
func (p *yamlParser) inline(indent int, text string) (*yamlNode, bool) {
	kind, s, ok := scalar(text)
	if !ok {
		if text[0] == '\'' {
			return p.quotedLines(indent, text)
		}
		return nil, false
	}
	p.skipBlank()
	if p.pos < len(p.lines) && p.lines[p.pos].indent > indent {
		return nil, false
	}
	return p.node(kind, s), true
}

// sequence reads a block sequence whose dashes are at indent.
func (p *yamlParser) sequence(indent int) (*yamlNode, bool) {
	n := p.node('[', "")
	start := len(p.valStack)
	for {
		p.skipBlank()
		if p.pos == len(p.lines) || p.lines[p.pos].indent < indent || !isSeqItem(p.lines[p.pos].text) {
			if p.pos < len(p.lines) && p.lines[p.pos].indent > indent {
				return nil, false
			}
			n.vals = p.takeVals(p.valStack[start:])
			p.valStack = p.valStack[:start]
			return n, true
		}
		l := p.lines[p.pos]
		if l.indent > indent {
			return nil, false
		}
		rest := strings.TrimLeft(l.text[1:], " ")
		if rest == "" || rest[0] == '#' || isSeqItem(rest) || rest[0] == '|' {
			return nil, false
		}
		col := l.indent + len(l.text) - len(rest)
		var v *yamlNode
		var ok bool
		if _, _, isKey := splitKey(rest); isKey {
			// "- key: value": a mapping whose keys are at the content's column.
			p.lines[p.pos] = fastLine{indent: col, text: rest}
			v, ok = p.mapping(col)
		} else {
			p.pos++
			v, ok = p.inline(indent, rest)
		}
		if !ok {
			return nil, false
		}
		p.valStack = append(p.valStack, v)
	}
}

// literal reads a literal block scalar ("|" or "|-") that belongs to a key
// at indent.
func (p *yamlParser) literal(indent int, header string) (*yamlNode, bool) {
	keep := true // "|": one final line break; "|-": none
	switch h := stripComment(header); h {
	case "|":
	case "|-":
		keep = false
	default:
		return nil, false
	}
	// The content's indentation is its first non-empty line's.
	content := -1
	for i := p.pos; i < len(p.lines); i++ {
		if l := p.lines[i]; l.text != "" {
			if l.indent > indent {
				content = l.indent
			}
			break
		}
	}
	var b strings.Builder
	pending := 0 // empty lines not yet written
	for ; p.pos < len(p.lines); p.pos++ {
		l := p.lines[p.pos]
		if l.text == "" {
			if content >= 0 && l.indent > content || content < 0 && l.indent > indent {
				return nil, false // spaces that would be content
			}
			pending++
			continue
		}
		if content < 0 || l.indent < content {
			break
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		for ; pending > 0; pending-- {
			b.WriteByte('\n')
		}
		b.WriteString(strings.Repeat(" ", l.indent-content))
		b.WriteString(l.text)
		if p.open && p.pos == len(p.lines)-1 {
			keep = false // no line break after the document's last line
		}
	}
	s := b.String()
	if keep && s != "" {
		s += "\n"
	}
	return p.node('"', s), true
}

// quotedLines reads a single-quoted scalar that first, the text after a
// key or dash at indent, opens and lines below close, each indented deeper
// than indent: the way YAML writers wrap a long string. YAML folds each
// line break, with the spaces around it, into one space. Blank lines (line
// breaks kept), comments and '#' anywhere (the key's line had its
// comment cut before the scalar was seen) are left to the YAML library.
func (p *yamlParser) quotedLines(indent int, first string) (*yamlNode, bool) {
	if strings.IndexByte(p.lines[p.pos-1].text, '#') >= 0 {
		return nil, false
	}
	var b strings.Builder
	if _, closed := unquoteSingle(&b, strings.TrimRight(first[1:], " ")); closed {
		return nil, false // closed, and followed by more than a comment
	}
	for ; p.pos < len(p.lines); p.pos++ {
		l := p.lines[p.pos]
		if l.text == "" || l.indent <= indent || strings.IndexByte(l.text, '#') >= 0 {
			return nil, false
		}
		b.WriteByte(' ')
		after, closed := unquoteSingle(&b, strings.TrimRight(l.text, " "))
		if closed {
			if strings.TrimLeft(after, " ") != "" {
				return nil, false
			}
			p.pos++
			p.skipBlank()
			if p.pos < len(p.lines) && p.lines[p.pos].indent > indent {
				return nil, false
			}
			return p.node('"', b.String()), true
		}
	}
	return nil, false // never closed
}

// unquoteSingle writes the text of a single-quoted scalar from s, which
// follows the opening quote, up to its closing quote, where two quotes
// in a row stand for one.
// It returns what follows the closing quote, and false when s has none.
func unquoteSingle(b *strings.Builder, s string) (after string, closed bool) {
	for i := 0; i < len(s); i++ {
		if s[i] != '\'' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '\'' {
			b.WriteByte('\'')
			i++
			continue
		}
		return s[i+1:], true
	}
	return "", false
}

// splitKey splits "key: rest" or "key:" with a plain key that YAML reads
// as a string; rest has its comment and spaces removed.
func splitKey(s string) (key, rest string, ok bool) {
	i := 0
	for i < len(s) && keyByte(s[i]) {
		i++
	}
	// YAML allows an implicit key of at most 1024 characters; longer ones
	// are left to the library.
	if i == 0 || i > 512 || i == len(s) || s[i] != ':' || i+1 < len(s) && s[i+1] != ' ' {
		return "", "", false
	}
	key = s[:i]
	if kind, _, ok := plain(key); !ok || kind != '"' {
		return "", "", false
	}
	return key, stripComment(s[i+1:]), true
}

func keyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '.' || c == '/' || c == '-'
}

// stripComment removes spaces and a " #" comment around s.
func stripComment(s string) string {
	s = strings.TrimLeft(s, " ")
	if strings.HasPrefix(s, "#") {
		return ""
	}
	if i := strings.Index(s, " #"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimRight(s, " ")
}

// scalar reads the value text after a key or dash: a string ('"' and its
// text) or another JSON value ('s' and its JSON).
func scalar(text string) (kind byte, s string, ok bool) {
	switch text[0] {
	case '"':
		end := strings.IndexByte(text[1:], '"') + 1
		if end == 0 || strings.IndexByte(text[:end], '\\') >= 0 || stripComment(text[end+1:]) != "" {
			return 0, "", false
		}
		return '"', text[1:end], true
	case '\'':
		var b strings.Builder
		after, closed := unquoteSingle(&b, text[1:])
		if !closed || stripComment(after) != "" {
			return 0, "", false
		}
		return '"', b.String(), true
	}
	s = stripComment(text)
	switch s {
	case "{}", "[]":
		return 's', s, true
	}
	return plain(s)
}

// plain resolves a plain scalar as YAML 1.1 (yaml.v2) does: null, a
// boolean or an integer as written (kind 's', its JSON), or a string (kind
// '"'); false for text the fast path leaves to the YAML library
// (indicators, a ": " inside, anything that may be a number other than a
// plain integer).
func plain(s string) (kind byte, json string, ok bool) {
	if s == "" || s == "<<" || strings.Contains(s, ": ") || strings.HasSuffix(s, ":") || strings.ContainsAny(s, "{}[]\"") {
		return 0, "", false
	}
	switch c := s[0]; {
	case strings.IndexByte("?:,#&*!|>'%@`", c) >= 0, c == '-' && (len(s) == 1 || s[1] == ' '):
		return 0, "", false
	case c == '+' || c == '-' || c == '.' || '0' <= c && c <= '9':
		if plainInt(s) {
			return 's', s, true
		}
		if mayBeNumber(s) {
			return 0, "", false
		}
		return '"', s, true
	}
	switch s {
	case "~", "null", "Null", "NULL":
		return 's', "null", true
	case "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON":
		return 's', "true", true
	case "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF":
		return 's', "false", true
	}
	return '"', s, true
}

// yamlFloat is yaml.v2's pattern of a float.
var yamlFloat = regexp.MustCompile(`^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`)

// mayBeNumber tells whether yaml.v2 may read the plain scalar s, which
// starts with a sign, a dot or a digit, as something other than a string:
// it tries what yaml.v2's resolve tries (.inf and .nan, integers in any
// base with "_" removed, floats, 0b binary) and says yes when any of them
// could succeed. A timestamp stays a string when decoded into an
// interface, as here.
func mayBeNumber(s string) bool {
	switch strings.TrimLeft(s, "+-") {
	case ".inf", ".Inf", ".INF", ".nan", ".NaN", ".NAN":
		return true
	}
	if strings.Trim(s, "0123456789abcdefABCDEFxXoO_+-.") != "" {
		return false // a byte no number has (and no allocating parse)
	}
	if s[0] == '.' {
		_, err := strconv.ParseFloat(s, 64)
		return err == nil
	}
	plain := strings.ReplaceAll(s, "_", "")
	if _, err := strconv.ParseInt(plain, 0, 64); err == nil {
		return true
	}
	if _, err := strconv.ParseUint(plain, 0, 64); err == nil {
		return true
	}
	return yamlFloat.MatchString(plain) || strings.HasPrefix(plain, "0b") || strings.HasPrefix(plain, "-0b")
}

// plainInt tells whether s is an integer written as JSON writes it: "0",
// or an optional minus and up to 18 digits without a leading zero.
func plainInt(s string) bool {
	if s == "0" {
		return true
	}
	s = strings.TrimPrefix(s, "-")
	if s == "" || len(s) > 18 || s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// appendJSONString appends s (ASCII without control characters other than
// line breaks) as encoding/json writes it, HTML characters escaped.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '<':
			b = append(b, `\u003c`...)
		case '>':
			b = append(b, `\u003e`...)
		case '&':
			b = append(b, `\u0026`...)
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// appendJSON appends n as compact JSON, object keys sorted as
// encoding/json sorts a map's.
func (n *yamlNode) appendJSON(b []byte) []byte {
	switch n.kind {
	case '{':
		order := make([]int, len(n.keys))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(i, j int) int { return strings.Compare(n.keys[i], n.keys[j]) })
		b = append(b, '{')
		for i, k := range order {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, n.keys[k])
			b = append(b, ':')
			b = n.vals[k].appendJSON(b)
		}
		return append(b, '}')
	case '[':
		b = append(b, '[')
		for i, v := range n.vals {
			if i > 0 {
				b = append(b, ',')
			}
			b = v.appendJSON(b)
		}
		return append(b, ']')
	case '"':
		return appendJSONString(b, n.text)
	}
	return append(b, n.text...)
}
