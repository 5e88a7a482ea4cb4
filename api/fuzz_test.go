package api

import (
	"encoding/json"
	"errors"
	"k8s.io/apimachinery/pkg/api/equality"
	"testing"
)

// FuzzDecode checks that Decode never panics, that what it refuses is a
// *DecodeError, and that what it accepts survives a round trip: marshal
// to JSON, decode again, same VMI. Default and Validate must not panic on
// anything Decode accepts either. (Run it with -fuzzminimizetime of a few
// seconds: minimizing large YAML inputs otherwise stalls for a minute.)
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"vmi-small.yaml", "vm-server.yaml", "vmi-windows.yaml"} {
		f.Add(readTestdata(f, name))
	}
	f.Add([]byte(""))
	f.Add([]byte("---\n"))
	f.Add([]byte(`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"j"},"spec":{"domain":{"devices":{}}}}`))
	f.Add([]byte("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nspec:\n  domain:\n    resources:\n      requests:\n        memory: 1.5.5Gi\n"))
	f.Add([]byte("apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: v}\nspec:\n  template:\n    spec:\n      domain: {cpu: {cores: 2}}\n"))
	f.Add([]byte("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nspec:\n  domain:\n    cpu: {sockets: 4294967295, cores: 4294967295}\n    memory: {guest: 9223372036854775807}\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		vmi, err := Decode(data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError: %v", err, err)
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		js, err := json.Marshal(vmi)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, err := Decode(js)
		if err != nil {
			t.Fatalf("decoding our own JSON: %v\n%s", err, js)
		}
		js2, err := json.Marshal(again)
		if err != nil {
			t.Fatalf("marshal again: %v", err)
		}
		if string(js) != string(js2) {
			t.Fatalf("round trip changed the VMI:\n%s\n%s", js, js2)
		}
		if !equality.Semantic.DeepEqual(vmi.Spec, again.Spec) {
			t.Fatalf("round trip changed the spec:\n%s", js)
		}
		d := vmi.DeepCopy()
		Default(d, ClusterConfig{})
		_ = Validate(d)
	})
}
