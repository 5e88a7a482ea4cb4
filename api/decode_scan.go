package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/vmi2libvirt/vmi2libvirt/internal/quantity"
)

// errScan reports JSON the scanner cannot follow. Decode only scans JSON
// that is known to be valid, so it is a safeguard, not a diagnosis.
var errScan = errors.New("malformed JSON")

// jsonScan checks the keys of a JSON document against a Go type in one pass
// over the bytes, without building a tree: it finds keys that no field of
// the type at their place takes, keys that repeat within one object, and
// quantities whose text would make resource.ParseQuantity run unbounded.
// The first pass only counts; when it finds something, a second pass with
// record set builds the errors, with paths, in document order.
type jsonScan struct {
	data   []byte
	pos    int
	record bool
	count  int
	errs   field.ErrorList
	// quantities counts the quantities quantity.Check refuses: the typed
	// decode must not see them.
	quantities int
}

// scanHeader reads the top-level apiVersion and kind of a JSON object. The
// map holds, for each of the two that is present, its string value, nil for
// null, or its raw JSON text for any other value.
func scanHeader(js []byte) (map[string]any, error) {
	s := &jsonScan{data: js}
	s.ws()
	if !s.eat('{') {
		return nil, errScan
	}
	hdr := make(map[string]any, 2)
	s.ws()
	if s.eat('}') {
		return hdr, nil
	}
	for {
		k, err := s.key()
		if err != nil {
			return nil, err
		}
		name := string(k)
		if name != "apiVersion" && name != "kind" {
			if err := s.skip(); err != nil {
				return nil, err
			}
		} else {
			start := s.pos
			if err := s.skip(); err != nil {
				return nil, err
			}
			raw := bytes.TrimSpace(s.data[start:s.pos])
			var v any = json.RawMessage(raw)
			switch {
			case bytes.Equal(raw, []byte("null")):
				v = nil
			case len(raw) > 0 && raw[0] == '"':
				var str string
				if json.Unmarshal(raw, &str) == nil {
					v = str
				}
			}
			hdr[name] = v
		}
		more, err := s.next('}')
		if err != nil {
			return nil, err
		}
		if !more {
			return hdr, nil
		}
	}
}

// checkKeys returns an error for every key of the JSON document js that no
// field of t (a pointer to a struct type) takes, for every key repeated
// within an object, and for every quantity quantity.Check refuses, in
// document order; badQuantity tells whether there is one of the last kind,
// in which case the document must not be decoded.
func checkKeys(t reflect.Type, js []byte) (errs field.ErrorList, badQuantity bool, err error) {
	s := &jsonScan{data: js}
	if err := s.value(t, nil); err != nil {
		return nil, false, err
	}
	if s.count == 0 {
		return nil, false, nil
	}
	s = &jsonScan{data: js, record: true}
	if err := s.value(t, nil); err != nil {
		return nil, false, err
	}
	return s.errs, s.quantities > 0, nil
}

// keyKind says how the keys of an object are checked.
type keyKind int

const (
	anyKeys    keyKind = iota // no type: only repeats are checked
	structKeys                // field names of a struct
	mapKeys                   // keys of a map
)

// value scans one value that decodes into t (nil: no type to check).
func (s *jsonScan) value(t reflect.Type, p *field.Path) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	s.ws()
	if s.pos >= len(s.data) {
		return errScan
	}
	switch s.data[s.pos] {
	case '{':
		switch {
		case t == nil:
			return s.object(anyKeys, nil, nil, p)
		case t.Kind() == reflect.Struct && !isLeaf(t):
			return s.object(structKeys, t, nil, p)
		case t.Kind() == reflect.Map:
			return s.object(mapKeys, nil, t.Elem(), p)
		default:
			return s.object(anyKeys, nil, nil, p)
		}
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && t.Elem().Kind() != reflect.Uint8 && !isLeaf(t) {
			elem = t.Elem()
		}
		s.pos++
		s.ws()
		if s.eat(']') {
			return nil
		}
		for i := 0; ; i++ {
			var cp *field.Path
			if s.record {
				cp = index(p, i)
			}
			if err := s.value(elem, cp); err != nil {
				return err
			}
			more, err := s.next(']')
			if err != nil || !more {
				return err
			}
		}
	default:
		if t == quantityType {
			return s.quantity(p)
		}
		return s.skip()
	}
}

// quantityType is resource.Quantity: its text is checked before the JSON
// decoder hands it to resource.ParseQuantity (see internal/quantity).
var quantityType = reflect.TypeOf(resource.Quantity{})

// quantity moves past a value that decodes into a resource.Quantity, a
// string or a bare number, and finds text whose parsing would take
// unbounded time (quantity.Check).
func (s *jsonScan) quantity(p *field.Path) error {
	start := s.pos
	if err := s.skip(); err != nil {
		return err
	}
	raw := s.data[start:s.pos]
	text := string(raw)
	if raw[0] == '"' && json.Unmarshal(raw, &text) != nil {
		return errScan
	}
	if err := quantity.Check(text); err != nil {
		s.count++
		s.quantities++
		if s.record {
			s.errs = append(s.errs, field.Invalid(p, text, err.Error()))
		}
	}
	return nil
}

// object scans an object whose opening brace is at the current position.
func (s *jsonScan) object(kind keyKind, st reflect.Type, elem reflect.Type, p *field.Path) error {
	s.pos++
	s.ws()
	if s.eat('}') {
		return nil
	}
	var fields structFields
	if kind == structKeys {
		fields = fieldsOf(st)
	}
	// Keys seen so far: sub-slices of the document, in a small array on
	// the stack, then in a set for large objects.
	var seenBuf [16][]byte
	seen := seenBuf[:0]
	var seenSet map[string]struct{}
	var reported [][]byte
	for {
		k, err := s.key()
		if err != nil {
			return err
		}
		dup := false
		if seenSet != nil {
			_, dup = seenSet[string(k)]
			seenSet[string(k)] = struct{}{}
		} else {
			for _, prev := range seen {
				if bytes.Equal(prev, k) {
					dup = true
					break
				}
			}
			if len(seen) < len(seenBuf) {
				seen = append(seen, k)
			} else {
				seenSet = make(map[string]struct{}, 4*len(seen))
				for _, prev := range seen {
					seenSet[string(prev)] = struct{}{}
				}
				seenSet[string(k)] = struct{}{}
			}
		}
		if dup {
			// Report each repeated key once per object.
			for _, r := range reported {
				if bytes.Equal(r, k) {
					dup = false
					break
				}
			}
			if dup {
				reported = append(reported, k)
			}
		}
		var ct reflect.Type
		unknown := false
		switch kind {
		case structKeys:
			ct = fields[string(k)]
			unknown = ct == nil
		case mapKeys:
			ct = elem
		}
		var cp *field.Path
		if dup || unknown {
			s.count++
		}
		if s.record {
			if kind == mapKeys {
				cp = key(p, string(k))
			} else {
				cp = child(p, string(k))
			}
			if dup {
				e := field.Duplicate(cp, string(k))
				e.Detail = "duplicate field"
				s.errs = append(s.errs, e)
			}
			if unknown {
				s.errs = append(s.errs, field.Forbidden(cp, unknownField))
			}
		}
		if err := s.value(ct, cp); err != nil {
			return err
		}
		more, err := s.next('}')
		if err != nil || !more {
			return err
		}
	}
}

// key reads an object key and the colon after it. The key is a sub-slice
// of the document unless it had to be unquoted.
func (s *jsonScan) key() ([]byte, error) {
	s.ws()
	start := s.pos
	escaped, err := s.str()
	if err != nil {
		return nil, err
	}
	raw := s.data[start:s.pos]
	k := raw[1 : len(raw)-1]
	if escaped || !ascii(k) {
		// Unquote as encoding/json does (escapes, invalid UTF-8 as U+FFFD).
		var str string
		if json.Unmarshal(raw, &str) != nil {
			return nil, errScan
		}
		k = []byte(str)
	}
	s.ws()
	if !s.eat(':') {
		return nil, errScan
	}
	return k, nil
}

// next moves past a comma (reporting more) or the closing byte.
func (s *jsonScan) next(closing byte) (bool, error) {
	s.ws()
	switch {
	case s.eat(','):
		return true, nil
	case s.eat(closing):
		return false, nil
	}
	return false, errScan
}

// str moves past a string at the current position and reports whether it
// has escapes.
func (s *jsonScan) str() (bool, error) {
	if !s.eat('"') {
		return false, errScan
	}
	escaped := false
	for s.pos < len(s.data) {
		i := bytes.IndexAny(s.data[s.pos:], `"\`)
		if i < 0 {
			break
		}
		s.pos += i
		if s.data[s.pos] == '"' {
			s.pos++
			return escaped, nil
		}
		escaped = true
		s.pos += 2
	}
	return false, errScan
}

// skip moves past one value without checking anything in it.
func (s *jsonScan) skip() error {
	s.ws()
	if s.pos >= len(s.data) {
		return errScan
	}
	switch c := s.data[s.pos]; c {
	case '"':
		_, err := s.str()
		return err
	case '{', '[':
		depth := 0
		for s.pos < len(s.data) {
			switch s.data[s.pos] {
			case '"':
				if _, err := s.str(); err != nil {
					return err
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.pos++
					return nil
				}
			}
			s.pos++
		}
		return errScan
	default:
		start := s.pos
		for s.pos < len(s.data) {
			switch s.data[s.pos] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				if s.pos == start {
					return errScan
				}
				return nil
			}
			s.pos++
		}
		if s.pos == start {
			return errScan
		}
		return nil
	}
}

func (s *jsonScan) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

func (s *jsonScan) eat(c byte) bool {
	if s.pos < len(s.data) && s.data[s.pos] == c {
		s.pos++
		return true
	}
	return false
}

func ascii(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}
