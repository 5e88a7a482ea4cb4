package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	sigsjson "sigs.k8s.io/json"
)

// The tree walker below is the first implementation of the unknown-field
// check (generic tree, sorted keys). It stays as the oracle of a
// differential test of checkKeys, which replaced it for speed.

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

// FuzzCheckKeys checks checkKeys against the tree walker: the same unknown
// fields, and repeated keys exactly when sigs.k8s.io/json's strict decoder
// finds some.
func FuzzCheckKeys(f *testing.F) {
	for _, name := range []string{"vmi-small.yaml", "vm-server.yaml", "vmi-windows.yaml"} {
		vmi, err := Decode(readTestdata(f, name))
		if err != nil {
			f.Fatal(err)
		}
		js, _ := json.Marshal(vmi)
		f.Add(js)
	}
	f.Add([]byte(`{"kind":"VirtualMachineInstance","spec":{"domain":{"devices":{"disks":[{"name":"a","dsk":{}}],"disks":[]}},"x":{"y":1,"y":2}},"metadata":{"labels":{"a.b/c":"d","a.b/c":"e"}}}`))
	f.Add([]byte(`{"spec":{"networks":[{"name":"n","pod":{"cidr":"x","vmNetworkCIDR":"10.0.0.0/8"}}],"domain":{"devices":{"interfaces":[{"name":"n","dhcpOptions":{"ntp":[]}}]}}}}`))
	f.Add([]byte(`{"\u0073pec":{"dom\"ain":{}} , "status" : {"phase":"Running","a\\b":[1,2,{"c":null}]}}`))
	vmiType := reflect.TypeFor[*v1.VirtualMachineInstance]()
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) || len(bytes.TrimSpace(data)) == 0 || bytes.TrimSpace(data)[0] != '{' {
			return
		}
		var tree any
		dups, err := sigsjson.UnmarshalStrict(data, &tree, sigsjson.DisallowDuplicateFields)
		if err != nil {
			return
		}
		got, _, err := checkKeys(vmiType, data)
		if err != nil {
			t.Fatalf("checkKeys refused valid JSON: %v", err)
		}
		var gotUnknown []string
		gotDups := 0
		for _, e := range got {
			if e.Type == field.ErrorTypeDuplicate {
				gotDups++
			} else {
				gotUnknown = append(gotUnknown, e.Field)
			}
		}
		// Counts may differ (repeated keys whose values repeat keys too are
		// walked twice here, once there), but not whether there are any.
		if (gotDups == 0) != (len(dups) == 0) {
			t.Fatalf("%d repeated keys, sigs.k8s.io/json finds %d: %v / %v", gotDups, len(dups), got, dups)
		}
		if len(dups) > 0 {
			return // the tree keeps only the last of repeated keys
		}
		var want []string
		for _, e := range unknownFields(vmiType, tree.(map[string]any)) {
			want = append(want, e.Field)
		}
		slices.Sort(gotUnknown)
		slices.Sort(want)
		if !slices.Equal(gotUnknown, want) {
			t.Fatalf("unknown fields %q, tree walker finds %q", gotUnknown, want)
		}
	})
}
