package crd

import (
	"bytes"
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
)

var update = flag.Bool("update", false, "rewrite "+File+" from kubevirt.io/api")

// TestCommittedIsGenerated regenerates the CRD and compares it byte for byte
// with the committed file, so the file never drifts from kubevirt.io/api's
// version in go.mod or from the generator.
func TestCommittedIsGenerated(t *testing.T) {
	generated, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if os.Getenv("CI") != "" {
			t.Fatal("-update refuses to run when CI is set")
		}
		if err := os.WriteFile(File, generated, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	committed, err := os.ReadFile(File)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, generated) {
		t.Errorf("%s is not what Generate makes now (run `go test ./crd -update` and read the diff):\n%s",
			File, cmp.Diff(string(committed), string(generated)))
	}
}

// TestCommittedIsKubeVirts checks the facts of the committed CRD that
// KubeVirt's operator sets (crds.go of KubeVirt v1.8.0, read by hand): a
// change to the generator that breaks one of them fails here with its name.
func TestCommittedIsKubeVirts(t *testing.T) {
	data, err := os.ReadFile(File)
	if err != nil {
		t.Fatal(err)
	}
	var crd extv1.CustomResourceDefinition
	if err := k8syaml.NewYAMLToJSONDecoder(bytes.NewReader(data)).Decode(&crd); err != nil {
		t.Fatal(err)
	}
	s := crd.Spec
	checks := []struct {
		what      string
		got, want any
	}{
		{"metadata.name", crd.Name, "virtualmachineinstances.kubevirt.io"},
		{"metadata.labels", crd.Labels, map[string]string{"kubevirt.io": ""}},
		{"group", s.Group, "kubevirt.io"},
		{"scope", s.Scope, extv1.NamespaceScoped},
		{"kind", s.Names.Kind, "VirtualMachineInstance"},
		{"plural", s.Names.Plural, "virtualmachineinstances"},
		{"singular", s.Names.Singular, "virtualmachineinstance"},
		{"shortNames", s.Names.ShortNames, []string{"vmi", "vmis"}},
		{"categories", s.Names.Categories, []string{"all"}},
		{"preserveUnknownFields", s.PreserveUnknownFields, false},
		{"conversion", s.Conversion, (*extv1.CustomResourceConversion)(nil)},
		{"number of versions", len(s.Versions), 2},
	}
	for _, c := range checks {
		if diff := cmp.Diff(c.want, c.got); diff != "" {
			t.Errorf("%s (-KubeVirt +committed):\n%s", c.what, diff)
		}
	}
	if t.Failed() {
		return
	}

	versions := []struct {
		name                        string
		served, storage, deprecated bool
		deprecationWarning          string
	}{
		{name: "v1", served: true, storage: true},
		{name: "v1alpha3", served: true, deprecated: true,
			deprecationWarning: "kubevirt.io/v1alpha3 is now deprecated and will be removed in a future release."},
	}
	columns := []string{"Age", "Phase", "IP", "NodeName", "Ready", "Live-Migratable", "Paused"}
	for i, want := range versions {
		v := s.Versions[i]
		if v.Name != want.name || v.Served != want.served || v.Storage != want.storage || v.Deprecated != want.deprecated {
			t.Errorf("versions[%d] = %s served=%t storage=%t deprecated=%t, KubeVirt has %+v", i, v.Name, v.Served, v.Storage, v.Deprecated, want)
		}
		if got := deref(v.DeprecationWarning); got != want.deprecationWarning {
			t.Errorf("versions[%d].deprecationWarning = %q, KubeVirt has %q", i, got, want.deprecationWarning)
		}
		if v.Subresources != nil {
			t.Errorf("versions[%d].subresources = %+v; KubeVirt's VMI CRD has none (no status subresource)", i, v.Subresources)
		}
		var names []string
		for _, c := range v.AdditionalPrinterColumns {
			names = append(names, c.Name)
		}
		if diff := cmp.Diff(columns, names); diff != "" {
			t.Errorf("versions[%d] printer columns (-KubeVirt +committed):\n%s", i, diff)
		}
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			t.Fatalf("versions[%d] has no schema", i)
		}
		root := v.Schema.OpenAPIV3Schema
		if root.Type != "object" || strings.Join(root.Required, ",") != "spec" {
			t.Errorf("versions[%d] schema root: type %q, required %v; want object, [spec]", i, root.Type, root.Required)
		}
		for _, field := range []string{"apiVersion", "kind", "metadata", "spec", "status"} {
			if _, ok := root.Properties[field]; !ok {
				t.Errorf("versions[%d] schema has no property %q", i, field)
			}
		}
		if i > 0 && !cmp.Equal(s.Versions[0].Schema, v.Schema) {
			t.Errorf("versions[%d] schema differs from versions[0]'s; KubeVirt serves one schema for all versions", i)
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
