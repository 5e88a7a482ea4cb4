package testcluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/vmi2libvirt/vmi2libvirt/examples/nodeagent/crd"
)

// TestCluster starts one cluster and checks, against the real API server and
// with the kubectl built beside it, what the node agent, the control plane
// and the README rely on: the CRDs are KubeVirt's and are served, every
// sample VMI and VM applies with all its fields, and a misspelt field gets
// the API server's strict-decoding answer.
func TestCluster(t *testing.T) {
	c := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	t.Run("CRDsEstablished", func(t *testing.T) { testCRDsEstablished(ctx, t, c) })
	t.Run("KubectlGet", func(t *testing.T) { testKubectlGet(ctx, t, c) })
	t.Run("ApplySamples", func(t *testing.T) { testApplySamples(ctx, t, c) })
	t.Run("MisspeltField", func(t *testing.T) { testMisspeltField(ctx, t, c) })
}

// testCRDsEstablished: the API server accepted each CRD as structural (a
// non-structural schema gets a NonStructuralSchema condition) and serves
// it, with the status subresource where KubeVirt has one.
func testCRDsEstablished(ctx context.Context, t *testing.T, c *Cluster) {
	cl, err := client.New(c.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := extv1.AddToScheme(cl.Scheme()); err != nil {
		t.Fatal(err)
	}
	for _, d := range crd.Definitions {
		var got extv1.CustomResourceDefinition
		if err := cl.Get(ctx, types.NamespacedName{Name: d.Name()}, &got); err != nil {
			t.Fatal(err)
		}
		conditions := map[extv1.CustomResourceDefinitionConditionType]extv1.ConditionStatus{}
		for _, cond := range got.Status.Conditions {
			conditions[cond.Type] = cond.Status
		}
		if conditions[extv1.Established] != extv1.ConditionTrue || conditions[extv1.NamesAccepted] != extv1.ConditionTrue {
			t.Errorf("%s conditions %v: want Established and NamesAccepted True", d.Name(), got.Status.Conditions)
		}
		if _, ok := conditions[extv1.NonStructuralSchema]; ok {
			t.Errorf("the API server finds the schema of %s non-structural: %v", d.Name(), got.Status.Conditions)
		}
		if sub := got.Spec.Versions[0].Subresources; (sub != nil && sub.Status != nil) != d.Status {
			t.Errorf("served %s has subresources %+v; KubeVirt's status subresource: %t", d.Name(), sub, d.Status)
		}
		if !slices.Equal(got.Status.AcceptedNames.ShortNames, d.Names.ShortNames) {
			t.Errorf("accepted short names of %s %v, want %v", d.Name(), got.Status.AcceptedNames.ShortNames, d.Names.ShortNames)
		}
		if !slices.Equal(got.Status.StoredVersions, []string{"v1"}) {
			t.Errorf("stored versions of %s %v, want [v1]", d.Name(), got.Status.StoredVersions)
		}
	}
}

// testKubectlGet: the short names resolve through discovery, both served
// versions answer, and v1alpha3 with KubeVirt's deprecation warning.
func testKubectlGet(ctx context.Context, t *testing.T, c *Cluster) {
	for _, args := range [][]string{
		{"get", "vmi"},
		{"get", "vmis", "--all-namespaces"},
		{"get", "virtualmachineinstances.v1alpha3.kubevirt.io"},
		{"get", "vm"},
		{"get", "vms", "--all-namespaces"},
		{"get", "virtualmachines.v1alpha3.kubevirt.io"},
		{"get", "vmim"},
	} {
		stdout, stderr, err := c.Kubectl(ctx, args...)
		if err != nil {
			t.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
			continue
		}
		want := "No resources found in default namespace.\n"
		if slices.Contains(args, "--all-namespaces") {
			want = "No resources found\n"
		}
		if strings.Contains(args[1], "v1alpha3") { // KubeVirt's deprecationWarning
			want = "Warning: kubevirt.io/v1alpha3 is now deprecated and will be removed in a future release.\n" + want
		}
		if stdout != "" || stderr != want {
			t.Errorf("kubectl %s printed stdout %q stderr %q, want stderr %q", strings.Join(args, " "), stdout, stderr, want)
		}
	}
	stdout, stderr, err := c.Kubectl(ctx, "api-resources", "--api-group=kubevirt.io", "--no-headers")
	if err != nil {
		t.Fatalf("kubectl api-resources: %v\n%s", err, stderr)
	}
	want := []string{
		"virtualmachineinstancemigrations", "vmim,vmims", "kubevirt.io/v1", "true", "VirtualMachineInstanceMigration",
		"virtualmachineinstances", "vmi,vmis", "kubevirt.io/v1", "true", "VirtualMachineInstance",
		"virtualmachines", "vm,vms", "kubevirt.io/v1", "true", "VirtualMachine",
	}
	if got := strings.Fields(stdout); !slices.Equal(got, want) {
		t.Errorf("kubectl api-resources --api-group=kubevirt.io: %q", stdout)
	}
}

// sample is one file of examples/vmis, or examples/nodeagent/samples.
type sample struct {
	path string
	obj  map[string]any
}

func (s sample) kind() string { return fmt.Sprint(s.obj["kind"]) }

func (s sample) meta(key string) string {
	m, _ := s.obj["metadata"].(map[string]any)
	return fmt.Sprint(m[key])
}

func readSamples(t *testing.T) []sample {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(root, "examples", "vmis", "*.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no sample in examples/vmis (%v)", err)
	}
	// And the README's VM of the test guest.
	paths = append(paths, filepath.Join(root, "examples", "nodeagent", "samples", "vm-tiny.yaml"))
	var samples []sample
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var obj map[string]any
		if err := yaml.Unmarshal(data, &obj); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		samples = append(samples, sample{path: p, obj: obj})
	}
	return samples
}

// testApplySamples applies every VirtualMachineInstance and VirtualMachine
// of examples/vmis (and examples/nodeagent/samples) with `kubectl apply -f`
// and reads it back: every field of
// the file is in the stored object with its value (the schema pruned
// nothing). (Nothing runs them here: no control plane, no node agent.)
func testApplySamples(ctx context.Context, t *testing.T, c *Cluster) {
	kinds := map[string]int{}
	for _, s := range readSamples(t) {
		name, ns := s.meta("name"), s.meta("namespace")
		t.Run(filepath.Base(s.path), func(t *testing.T) {
			resource := map[string]string{"VirtualMachineInstance": "virtualmachineinstance", "VirtualMachine": "virtualmachine"}[s.kind()]
			if resource == "" {
				t.Fatalf("kind %q: examples/vmis holds VirtualMachineInstances and VirtualMachines", s.kind())
			}
			kinds[s.kind()]++
			// The samples use namespaces other than default; create them
			// (it is fine if another sample created it already).
			if _, stderr, err := c.Kubectl(ctx, "create", "namespace", ns); err != nil && !strings.Contains(stderr, "AlreadyExists") {
				t.Fatalf("kubectl create namespace %s: %v\n%s", ns, err, stderr)
			}
			stdout, stderr, err := c.Kubectl(ctx, "apply", "-f", s.path)
			if err != nil || stdout != resource+".kubevirt.io/"+name+" created\n" || stderr != "" {
				t.Fatalf("kubectl apply -f %s: %v\nstdout: %s\nstderr: %s", s.path, err, stdout, stderr)
			}
			stdout, stderr, err = c.Kubectl(ctx, "get", resource, "-n", ns, name, "-o", "json")
			if err != nil {
				t.Fatalf("kubectl get %s %s: %v\n%s", resource, name, err, stderr)
			}
			var stored map[string]any
			if err := json.Unmarshal([]byte(stdout), &stored); err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"spec", "metadata"} {
				for _, missing := range notIn(s.obj[key], stored[key], key) {
					t.Errorf("%s: the stored %s lost %s", filepath.Base(s.path), s.kind(), missing)
				}
			}
		})
	}
	if kinds["VirtualMachineInstance"] < 10 || kinds["VirtualMachine"] < 2 {
		t.Errorf("applied %v; the samples hold at least 10 VMIs and two VMs", kinds)
	}
}

// notIn returns the paths of the values of want that got does not hold
// with the same value (got may hold more: fields the schema defaults).
func notIn(want, got any, path string) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{path}
		}
		var missing []string
		for k, v := range w {
			missing = append(missing, notIn(v, g[k], path+"."+k)...)
		}
		return missing
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{path}
		}
		var missing []string
		for i := range w {
			missing = append(missing, notIn(w[i], g[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return missing
	default:
		if !reflect.DeepEqual(want, got) {
			return []string{fmt.Sprintf("%s (%v, stored %v)", path, want, got)}
		}
		return nil
	}
}

// testMisspeltField applies vmi-tiny.yaml with spec.domain.devices
// misspelt. kubectl's default validation (--validate=strict) asks the API
// server for strict field validation, and the API server refuses the object
// while decoding it against the CRD's schema, before any admission webhook:
// KubeVirt's own cluster gives the same answer. Nothing is created.
func testMisspeltField(ctx context.Context, t *testing.T, c *Cluster) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "examples", "vmis", "vmi-tiny.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(data), "name: tiny", "name: misspelt", 1)
	text = strings.Replace(text, "    devices: {}", "    devcies: {}", 1)
	if !strings.Contains(text, "devcies") || !strings.Contains(text, "misspelt") {
		t.Fatal("vmi-tiny.yaml changed: the test no longer finds `    devices: {}` and `name: tiny` in it")
	}
	path := filepath.Join(t.TempDir(), "misspelt.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}

	_, stderr, err := c.Kubectl(ctx, "apply", "-f", path)
	want := fmt.Sprintf("Error from server (BadRequest): error when creating %q: VirtualMachineInstance in version \"v1\" "+
		"cannot be handled as a VirtualMachineInstance: strict decoding error: unknown field \"spec.domain.devcies\"\n", path)
	if err == nil || stderr != want {
		t.Errorf("kubectl apply of a misspelt field: err %v, stderr:\n%s\nwant:\n%s", err, stderr, want)
	}
	_, stderr, err = c.Kubectl(ctx, "get", "vmi", "misspelt")
	if err == nil || !strings.Contains(stderr, `virtualmachineinstances.kubevirt.io "misspelt" not found`) {
		t.Errorf("the refused VMI exists: err %v, stderr %q", err, stderr)
	}
}

func TestNotIn(t *testing.T) {
	file := map[string]any{"a": map[string]any{"b": "x", "c": []any{1.0, map[string]any{"d": true}}}}
	cases := []struct {
		name   string
		stored any
		want   []string
	}{
		{"same", map[string]any{"a": map[string]any{"b": "x", "c": []any{1.0, map[string]any{"d": true}}}}, nil},
		{"more is fine", map[string]any{"a": map[string]any{"b": "x", "e": 2.0, "c": []any{1.0, map[string]any{"d": true, "f": ""}}}}, nil},
		{"pruned", map[string]any{"a": map[string]any{"c": []any{1.0, map[string]any{}}}}, []string{"spec.a.b (x, stored <nil>)", "spec.a.c[1].d (true, stored <nil>)"}},
		{"list changed", map[string]any{"a": map[string]any{"b": "x", "c": []any{1.0}}}, []string{"spec.a.c"}},
		{"not an object", "a", []string{"spec"}},
	}
	for _, c := range cases {
		got := notIn(file, c.stored, "spec")
		slices.Sort(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: notIn = %q, want %q", c.name, got, c.want)
		}
	}
}
