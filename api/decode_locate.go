package api

import (
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
)

// locateErrors finds where in js the values are that made decoding into
// out fail with err, and returns a field error at each of their paths. The
// JSON decoder stops at the first bad value, names no path for errors of
// custom decoders (quantities, times) and only a path without list indexes
// for type errors, so this walks the document again, decoding each member
// on its own and going down into every one that fails, to the smallest
// values that fail. Members of an object are visited in the order of their
// keys. It runs only when decoding already failed.
func locateErrors(out any, js []byte, err error) field.ErrorList {
	var errs field.ErrorList
	locate(reflect.TypeOf(out), js, nil, err, &errs)
	return errs
}

// locate adds to errs an error for every smallest member below p whose
// value does not decode into t; for p itself, with err, when no member
// fails on its own.
func locate(t reflect.Type, js []byte, p *field.Path, err error, errs *field.ErrorList) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	found := false
	if !isLeaf(t) {
		switch t.Kind() {
		case reflect.Struct:
			if obj, keys, ok := members(js); ok {
				fields := fieldsOf(t)
				for _, k := range keys {
					ft, ok := fields[k]
					if !ok {
						continue
					}
					if cerr := decodeInto(ft, obj[k]); cerr != nil {
						locate(ft, obj[k], child(p, k), cerr, errs)
						found = true
					}
				}
			}
		case reflect.Slice:
			var items []json.RawMessage
			if t.Elem().Kind() != reflect.Uint8 && json.Unmarshal(js, &items) == nil {
				for i, it := range items {
					if cerr := decodeInto(t.Elem(), it); cerr != nil {
						locate(t.Elem(), it, index(p, i), cerr, errs)
						found = true
					}
				}
			}
		case reflect.Map:
			if obj, keys, ok := members(js); ok {
				for _, k := range keys {
					if cerr := decodeInto(t.Elem(), obj[k]); cerr != nil {
						locate(t.Elem(), obj[k], key(p, k), cerr, errs)
						found = true
					}
				}
			}
		}
	}
	if !found {
		at := p
		if at == nil {
			at = field.NewPath("<document>")
		}
		*errs = append(*errs, field.Invalid(at, nil, decodeMessage(err)))
	}
}

// members splits a JSON object into its members, with its keys sorted so
// that the walk is deterministic; ok is false when js is not an object.
func members(js []byte) (obj map[string]json.RawMessage, keys []string, ok bool) {
	if json.Unmarshal(js, &obj) != nil {
		return nil, nil, false
	}
	return obj, slices.Sorted(maps.Keys(obj)), true
}

func decodeInto(t reflect.Type, js []byte) error {
	v := reflect.New(t)
	return sigsjson.UnmarshalCaseSensitivePreserveInts(js, v.Interface())
}

// child names an object's field: as .name when k reads like a field name,
// else as a map key would be named (a field no type has can be any string).
func child(p *field.Path, k string) *field.Path {
	if !fieldName(k) {
		return key(p, k)
	}
	if p == nil {
		return field.NewPath(k)
	}
	return p.Child(k)
}

func index(p *field.Path, i int) *field.Path {
	if p == nil {
		return field.NewPath("<document>").Index(i)
	}
	return p.Index(i)
}

// key names a map entry: as a child when the key reads like a field name
// (resources.requests.memory, as users write it), as [key] when it is
// printable and holds no bracket or quote (labels such as kubevirt.io/vm),
// else as ["key"] in Go's quoting, so that a path stays on one line and
// says where the key ends.
func key(p *field.Path, k string) *field.Path {
	if p == nil {
		p = field.NewPath("<document>")
	} else if fieldName(k) {
		return p.Child(k)
	}
	if k == "" || strings.ContainsAny(k, `[]"`) || strings.ContainsFunc(k, func(r rune) bool { return !unicode.IsPrint(r) }) {
		return p.Key(strconv.Quote(k))
	}
	return p.Key(k)
}

// fieldName tells whether k can stand after a "." in a path: ASCII letters,
// digits, "-" and "_".
func fieldName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// decodeMessage rewords a decode error for a user: no "json:" prefix, no Go
// type names where a JSON type says it.
func decodeMessage(err error) string {
	if err == nil {
		return "cannot decode value"
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "cannot decode " + te.Value + " as " + jsonKind(te.Type)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// jsonKind names what a Go type expects in JSON terms.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "this field"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer (" + t.Kind().String() + ")"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer (" + t.Kind().String() + ")"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}
