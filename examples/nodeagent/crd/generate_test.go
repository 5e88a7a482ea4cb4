package crd

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
)

var update = flag.Bool("update", false, "rewrite the committed CRDs from kubevirt.io/api")

// TestCommittedIsGenerated regenerates the CRDs and compares each byte for
// byte with its committed file, so no file drifts from kubevirt.io/api's
// version in go.mod or from the generator, and no YAML file of this folder
// is one Generate does not make.
func TestCommittedIsGenerated(t *testing.T) {
	generated, err := Generate()
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if os.Getenv("CI") != "" {
			t.Fatal("-update refuses to run when CI is set")
		}
		for file, data := range generated {
			if err := os.WriteFile(file, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	for file, data := range generated {
		committed, err := os.ReadFile(file)
		if err != nil {
			t.Error(err)
			continue
		}
		if !bytes.Equal(committed, data) {
			t.Errorf("%s is not what Generate makes now (run `go test ./crd -update` and read the diff):\n%s",
				file, cmp.Diff(string(committed), string(data)))
		}
	}
	files, err := filepath.Glob("*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, ok := generated[f]; !ok {
			t.Errorf("%s is not a CRD Generate makes: remove it", f)
		}
	}
}

// TestCommittedIsKubeVirts checks the facts of each committed CRD that
// KubeVirt's operator sets (crds.go of KubeVirt v1.8.0, read by hand): a
// change to the generator that breaks one of them fails here with its name.
func TestCommittedIsKubeVirts(t *testing.T) {
	cases := []struct {
		file, kind, plural, singular string
		shortNames, columns          []string
		status                       bool
	}{
		{"virtualmachineinstances.kubevirt.io.yaml", "VirtualMachineInstance", "virtualmachineinstances", "virtualmachineinstance",
			[]string{"vmi", "vmis"}, []string{"Age", "Phase", "IP", "NodeName", "Ready", "Live-Migratable", "Paused"}, false},
		{"virtualmachines.kubevirt.io.yaml", "VirtualMachine", "virtualmachines", "virtualmachine",
			[]string{"vm", "vms"}, []string{"Age", "Status", "Ready"}, true},
		{"virtualmachineinstancemigrations.kubevirt.io.yaml", "VirtualMachineInstanceMigration", "virtualmachineinstancemigrations", "virtualmachineinstancemigration",
			[]string{"vmim", "vmims"}, []string{"Phase", "VMI"}, true},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			crd := readCRD(t, c.file)
			s := crd.Spec
			checks := []struct {
				what      string
				got, want any
			}{
				{"metadata.name", crd.Name, c.plural + ".kubevirt.io"},
				{"metadata.labels", crd.Labels, map[string]string{"kubevirt.io": ""}},
				{"group", s.Group, "kubevirt.io"},
				{"scope", s.Scope, extv1.NamespaceScoped},
				{"kind", s.Names.Kind, c.kind},
				{"plural", s.Names.Plural, c.plural},
				{"singular", s.Names.Singular, c.singular},
				{"shortNames", s.Names.ShortNames, c.shortNames},
				{"categories", s.Names.Categories, []string{"all"}},
				{"preserveUnknownFields", s.PreserveUnknownFields, false},
				{"conversion", s.Conversion, (*extv1.CustomResourceConversion)(nil)},
				{"number of versions", len(s.Versions), 2},
			}
			for _, ch := range checks {
				if diff := cmp.Diff(ch.want, ch.got); diff != "" {
					t.Errorf("%s (-KubeVirt +committed):\n%s", ch.what, diff)
				}
			}
			if t.Failed() {
				return
			}
			checkVersions(t, s, c.columns, c.status)
		})
	}
}

// checkVersions checks the versions of a CRD as KubeVirt declares them:
// v1 stored, v1alpha3 deprecated, each with columns, the status
// subresource or none, and one structural schema shared by both.
func checkVersions(t *testing.T, s extv1.CustomResourceDefinitionSpec, columns []string, status bool) {
	versions := []struct {
		name                        string
		served, storage, deprecated bool
		deprecationWarning          string
	}{
		{name: "v1", served: true, storage: true},
		{name: "v1alpha3", served: true, deprecated: true,
			deprecationWarning: "kubevirt.io/v1alpha3 is now deprecated and will be removed in a future release."},
	}
	for i, want := range versions {
		v := s.Versions[i]
		if v.Name != want.name || v.Served != want.served || v.Storage != want.storage || v.Deprecated != want.deprecated {
			t.Errorf("versions[%d] = %s served=%t storage=%t deprecated=%t, KubeVirt has %+v", i, v.Name, v.Served, v.Storage, v.Deprecated, want)
		}
		if got := deref(v.DeprecationWarning); got != want.deprecationWarning {
			t.Errorf("versions[%d].deprecationWarning = %q, KubeVirt has %q", i, got, want.deprecationWarning)
		}
		wantSub := (*extv1.CustomResourceSubresources)(nil)
		if status {
			wantSub = &extv1.CustomResourceSubresources{Status: &extv1.CustomResourceSubresourceStatus{}}
		}
		if diff := cmp.Diff(wantSub, v.Subresources); diff != "" {
			t.Errorf("versions[%d].subresources (-KubeVirt +committed):\n%s", i, diff)
		}
		var names []string
		for _, c := range v.AdditionalPrinterColumns {
			names = append(names, c.Name)
		}
		if !slices.Equal(columns, names) {
			t.Errorf("versions[%d] printer columns %v, KubeVirt has %v", i, names, columns)
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

func readCRD(t *testing.T, file string) extv1.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var crd extv1.CustomResourceDefinition
	if err := k8syaml.NewYAMLToJSONDecoder(bytes.NewReader(data)).Decode(&crd); err != nil {
		t.Fatal(err)
	}
	return crd
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
