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
)

// TestCluster starts one cluster and checks, against the real API server and
// with the kubectl built beside it, what the node agent and the README rely
// on: the CRD is KubeVirt's and is served, every sample VMI applies with all
// its fields, and a misspelt field gets the API server's strict-decoding
// answer.
func TestCluster(t *testing.T) {
	c := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	t.Run("CRDEstablished", func(t *testing.T) { testCRDEstablished(ctx, t, c) })
	t.Run("KubectlGetVMI", func(t *testing.T) { testKubectlGetVMI(ctx, t, c) })
	t.Run("ApplySampleVMIs", func(t *testing.T) { testApplySampleVMIs(ctx, t, c) })
	t.Run("MisspeltField", func(t *testing.T) { testMisspeltField(ctx, t, c) })
}

// testCRDEstablished: the API server accepted the CRD as structural (a
// non-structural schema gets a NonStructuralSchema condition) and serves it.
func testCRDEstablished(ctx context.Context, t *testing.T, c *Cluster) {
	cl, err := client.New(c.Config, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := extv1.AddToScheme(cl.Scheme()); err != nil {
		t.Fatal(err)
	}
	var got extv1.CustomResourceDefinition
	if err := cl.Get(ctx, types.NamespacedName{Name: "virtualmachineinstances.kubevirt.io"}, &got); err != nil {
		t.Fatal(err)
	}
	conditions := map[extv1.CustomResourceDefinitionConditionType]extv1.ConditionStatus{}
	for _, cond := range got.Status.Conditions {
		conditions[cond.Type] = cond.Status
	}
	if conditions[extv1.Established] != extv1.ConditionTrue || conditions[extv1.NamesAccepted] != extv1.ConditionTrue {
		t.Errorf("CRD conditions %v: want Established and NamesAccepted True", got.Status.Conditions)
	}
	if _, ok := conditions[extv1.NonStructuralSchema]; ok {
		t.Errorf("the API server finds the schema non-structural: %v", got.Status.Conditions)
	}
	if got.Spec.Versions[0].Subresources != nil {
		t.Errorf("served CRD has subresources %+v; KubeVirt's has none", got.Spec.Versions[0].Subresources)
	}
	if diff := slices.Compare(got.Status.AcceptedNames.ShortNames, []string{"vmi", "vmis"}); diff != 0 {
		t.Errorf("accepted short names %v, want [vmi vmis]", got.Status.AcceptedNames.ShortNames)
	}
	if !slices.Equal(got.Status.StoredVersions, []string{"v1"}) {
		t.Errorf("stored versions %v, want [v1]", got.Status.StoredVersions)
	}
}

// testKubectlGetVMI: the short names resolve through discovery, both served
// versions answer, and v1alpha3 with KubeVirt's deprecation warning.
func testKubectlGetVMI(ctx context.Context, t *testing.T, c *Cluster) {
	for _, args := range [][]string{
		{"get", "vmi"},
		{"get", "vmis", "--all-namespaces"},
		{"get", "virtualmachineinstances.v1alpha3.kubevirt.io"},
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
	if got := strings.Fields(stdout); !slices.Equal(got, []string{"virtualmachineinstances", "vmi,vmis", "kubevirt.io/v1", "true", "VirtualMachineInstance"}) {
		t.Errorf("kubectl api-resources --api-group=kubevirt.io: %q", stdout)
	}
}

// sample is one file of examples/vmis.
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

// testApplySampleVMIs applies every VirtualMachineInstance of examples/vmis
// with `kubectl apply -f` and reads it back: every field of the file is in
// the stored object with its value (the schema pruned nothing). The one
// VirtualMachine (vm-fedora.yaml) is refused, since only the VMI CRD is
// installed: nothing here turns a VirtualMachine into VMIs (KubeVirt's
// virt-controller does), so its CRD would only accept objects nobody acts
// on.
func testApplySampleVMIs(ctx context.Context, t *testing.T, c *Cluster) {
	vmis := 0
	for _, s := range readSamples(t) {
		name, ns := s.meta("name"), s.meta("namespace")
		t.Run(filepath.Base(s.path), func(t *testing.T) {
			if s.kind() != "VirtualMachineInstance" {
				_, stderr, err := c.Kubectl(ctx, "apply", "-f", s.path)
				want := fmt.Sprintf("error: resource mapping not found for name: %q namespace: %q from %q: "+
					"no matches for kind %q in version \"kubevirt.io/v1\"\nensure CRDs are installed first\n", name, ns, s.path, s.kind())
				if err == nil || stderr != want {
					t.Errorf("kubectl apply of a %s: err %v, stderr:\n%s\nwant:\n%s", s.kind(), err, stderr, want)
				}
				return
			}
			vmis++
			// The samples use namespaces other than default; create them
			// (it is fine if another sample created it already).
			if _, stderr, err := c.Kubectl(ctx, "create", "namespace", ns); err != nil && !strings.Contains(stderr, "AlreadyExists") {
				t.Fatalf("kubectl create namespace %s: %v\n%s", ns, err, stderr)
			}
			stdout, stderr, err := c.Kubectl(ctx, "apply", "-f", s.path)
			if err != nil || stdout != "virtualmachineinstance.kubevirt.io/"+name+" created\n" || stderr != "" {
				t.Fatalf("kubectl apply -f %s: %v\nstdout: %s\nstderr: %s", s.path, err, stdout, stderr)
			}
			stdout, stderr, err = c.Kubectl(ctx, "get", "vmi", "-n", ns, name, "-o", "json")
			if err != nil {
				t.Fatalf("kubectl get vmi %s: %v\n%s", name, err, stderr)
			}
			var stored map[string]any
			if err := json.Unmarshal([]byte(stdout), &stored); err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"spec", "metadata"} {
				for _, missing := range notIn(s.obj[key], stored[key], key) {
					t.Errorf("%s: the stored VMI lost %s", filepath.Base(s.path), missing)
				}
			}
		})
	}
	if vmis < 10 {
		t.Errorf("applied %d sample VMIs; examples/vmis holds at least 10", vmis)
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
