package api

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync"

	v1 "kubevirt.io/api/core/v1"
)

// KubeVirt's VirtualMachineInstanceSpec, PodNetwork and DHCPOptions decode
// themselves with encoding/json (to tidy IP addresses), which is neither
// strict nor case-sensitive, so a strict decoder cannot see into them.
// Decode therefore checks field names itself (decode_scan.go): it follows
// the JSON along the Go types and reports every key no field takes.

// aliasDecoders are the types whose own UnmarshalJSON decodes an object into
// the type's fields; the walk goes into them. Every other type with an
// UnmarshalJSON (quantities, times, int-or-string) is a leaf.
var aliasDecoders = map[reflect.Type]bool{
	reflect.TypeFor[v1.VirtualMachineInstanceSpec](): true,
	reflect.TypeFor[v1.PodNetwork]():                 true,
	reflect.TypeFor[v1.DHCPOptions]():                true,
}

// structFields maps the JSON names of a struct type's fields (including
// those of embedded structs) to their types.
type structFields map[string]reflect.Type

var fieldCache sync.Map // reflect.Type -> structFields

// fieldsOf returns the field table of struct type t, built once per type.
func fieldsOf(t reflect.Type) structFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(structFields)
	}
	f := structFields{}
	collectFields(t, f)
	fieldCache.Store(t, f)
	return f
}

// collectFields adds the JSON fields of t to into: its own fields first,
// then those promoted from embedded structs, so that (as in encoding/json)
// a shallower field wins over a promoted one of the same name.
func collectFields(t reflect.Type, into structFields) {
	keep := func(name string, ft reflect.Type) {
		if _, dup := into[name]; !dup {
			into[name] = ft
		}
	}
	walkJSONFields(t, func(name string, _ int, ft reflect.Type) { keep(name, ft) }, func(_ int, et reflect.Type) {
		promoted := structFields{}
		collectFields(et, promoted)
		for name, ft := range promoted {
			keep(name, ft)
		}
	})
}

// walkJSONFields is the one walk of a struct's JSON fields, which the
// field table (collectFields) and the direct decoder's plans
// (planBuilder.collect) share: it calls named for each field of struct t
// that encoding/json names (its tag's name, else its Go name; "-" and
// unexported fields skipped), with its index, then embedded for each
// embedded struct without a tag name (a struct, or an exported pointer to
// one), with its index and the struct type, whose fields are promoted.
func walkJSONFields(t reflect.Type, named func(name string, i int, ft reflect.Type), embedded func(i int, et reflect.Type)) {
	var promoted []int
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			k := f.Type.Kind()
			if k == reflect.Struct || k == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct && f.IsExported() {
				promoted = append(promoted, i)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		named(name, i, f.Type)
	}
	for _, i := range promoted {
		et := t.Field(i).Type
		if et.Kind() == reflect.Pointer {
			et = et.Elem() // allocated when a field of it is set
		}
		embedded(i, et)
	}
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// isLeaf reports whether t decodes itself from JSON in its own way.
func isLeaf(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(jsonUnmarshaler) && !aliasDecoders[t]
}
