package api

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
)

// KubeVirt's VirtualMachineInstanceSpec, PodNetwork and DHCPOptions decode
// themselves with encoding/json (to tidy IP addresses), which is neither
// strict nor case-sensitive, so a strict decoder cannot see into them.
// Decode therefore checks field names itself: it walks the generic tree of
// the document along the Go types and reports every key no field takes.

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

func fieldsOf(t reflect.Type) structFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(structFields)
	}
	f := structFields{}
	collectFields(t, f)
	fieldCache.Store(t, f)
	return f
}

func collectFields(t reflect.Type, into structFields) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			et := f.Type
			for et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				collectFields(et, into)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := into[name]; !dup {
			into[name] = f.Type
		}
	}
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

// isLeaf reports whether t decodes itself from JSON in its own way.
func isLeaf(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(jsonUnmarshaler) && !aliasDecoders[t]
}

// unknownFields returns an error for every key of obj (at any depth) that no
// field of t takes, sorted by path. t is a pointer to a struct type.
func unknownFields(t reflect.Type, obj map[string]any) field.ErrorList {
	w := fieldWalk{}
	w.walk(t, obj, nil)
	if w.count == 0 {
		return nil
	}
	// Walk again, in sorted key order, to list them deterministically.
	w = fieldWalk{record: true}
	w.walk(t, obj, nil)
	return w.errs
}

type fieldWalk struct {
	record bool
	count  int
	errs   field.ErrorList
}

func (w *fieldWalk) walk(t reflect.Type, v any, p *field.Path) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := v.(map[string]any)
		if !ok || isLeaf(t) {
			return
		}
		fields := fieldsOf(t)
		if !w.record {
			for k, cv := range obj {
				ft, ok := fields[k]
				if !ok {
					w.count++
					continue
				}
				w.walk(ft, cv, nil)
			}
			return
		}
		for _, k := range sortedKeys(obj) {
			ft, ok := fields[k]
			if !ok {
				w.errs = append(w.errs, field.Forbidden(child(p, k), unknownField))
				continue
			}
			w.walk(ft, obj[k], child(p, k))
		}
	case reflect.Slice, reflect.Array:
		items, ok := v.([]any)
		if !ok {
			return
		}
		for i, it := range items {
			var cp *field.Path
			if w.record {
				cp = index(p, i)
			}
			w.walk(t.Elem(), it, cp)
		}
	case reflect.Map:
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		if !w.record {
			for _, cv := range obj {
				w.walk(t.Elem(), cv, nil)
			}
			return
		}
		for _, k := range sortedKeys(obj) {
			w.walk(t.Elem(), obj[k], key(p, k))
		}
	}
}

func sortedKeys(obj map[string]any) []string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
