// Package crd holds KubeVirt's VirtualMachineInstance CustomResourceDefinition
// as KubeVirt's operator installs it, and the generator that reproduces it
// from the published kubevirt.io/api module.
//
// The committed file (File, in this folder) is what the node agent's tests
// and .ci/cluster.sh install, so neither needs a generator at run time.
// `go test ./crd -update` (from examples/nodeagent) rewrites it; a normal run
// regenerates it and fails when the two differ.
//
// It lives in the node agent's module, not the library's, because the
// generator needs sigs.k8s.io/controller-tools, which an embedder of the
// library must not inherit, and the agent is the only thing that needs a CRD.
package crd

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	virtv1 "kubevirt.io/api/core/v1"
	crdgen "sigs.k8s.io/controller-tools/pkg/crd"
	"sigs.k8s.io/controller-tools/pkg/genall"
	"sigs.k8s.io/controller-tools/pkg/loader"
	"sigs.k8s.io/yaml"
)

// File is the name of the committed CRD in this folder.
const File = "virtualmachineinstances.kubevirt.io.yaml"

// Name is the CRD's object name.
const Name = "virtualmachineinstances.kubevirt.io"

// APIPackage is the Go package whose types the schema is generated from:
// the version of kubevirt.io/api this module requires decides the schema.
const APIPackage = "kubevirt.io/api/core/v1"

// Generate builds the VirtualMachineInstance CRD the way KubeVirt v1.8.0
// does and returns it as YAML.
//
// The schema is KubeVirt's hack/generate.sh step: controller-gen's
// `crd:allowDangerousTypes=true paths=<kubevirt.io/api/core/v1>`, the first
// version's openAPIV3Schema taken from the VirtualMachineInstance CRD it
// writes, backticks in descriptions turned into single quotes
// (tools/crd-validation-generator); that generated schema is what
// pkg/virt-operator/resource/generate/components/validations_generated.go
// holds. The rest of the object is NewVirtualMachineInstanceCrd in
// pkg/virt-operator/resource/generate/components/crds.go: the "kubevirt.io"
// label, group, names and short names, the versions kubevirt.io/api declares
// (ApiSupportedVersions: v1 served and stored, v1alpha3 served and
// deprecated), the printer columns, the schema on every version, and no
// subresources (no status subresource: status is written with the object).
//
// Checked against KubeVirt v1.8.0's source: the generated openAPIV3Schema
// is equal (decoded, compared as extv1.JSONSchemaProps) to the
// "virtualmachineinstance" entry of validations_generated.go, and names,
// columns and versions were compared with crds.go by reading.
//
// Generate loads kubevirt.io/api/core/v1 with `go list`, so it runs inside
// this module with the module's dependencies downloaded.
func Generate() ([]byte, error) {
	schema, err := generateSchema()
	if err != nil {
		return nil, err
	}
	crd := extv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   Name,
			Labels: map[string]string{virtv1.AppLabel: ""},
		},
		Spec: extv1.CustomResourceDefinitionSpec{
			Group: virtv1.VirtualMachineInstanceGroupVersionKind.Group,
			Scope: extv1.NamespaceScoped,
			Names: extv1.CustomResourceDefinitionNames{
				Plural:     "virtualmachineinstances",
				Singular:   "virtualmachineinstance",
				Kind:       virtv1.VirtualMachineInstanceGroupVersionKind.Kind,
				ShortNames: []string{"vmi", "vmis"},
				Categories: []string{"all"},
			},
		},
	}
	for _, v := range virtv1.ApiSupportedVersions {
		v := *v.DeepCopy()
		v.AdditionalPrinterColumns = printerColumns()
		v.Schema = &extv1.CustomResourceValidation{OpenAPIV3Schema: schema.DeepCopy()}
		crd.Spec.Versions = append(crd.Spec.Versions, v)
	}
	return marshal(&crd)
}

// printerColumns are the columns `kubectl get vmi` shows, as crds.go
// declares them (the last two only with -o wide).
func printerColumns() []extv1.CustomResourceColumnDefinition {
	return []extv1.CustomResourceColumnDefinition{
		{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
		{Name: "Phase", Type: "string", JSONPath: ".status.phase"},
		{Name: "IP", Type: "string", JSONPath: ".status.interfaces[0].ipAddress"},
		{Name: "NodeName", Type: "string", JSONPath: ".status.nodeName"},
		{Name: "Ready", Type: "string", JSONPath: ".status.conditions[?(@.type=='Ready')].status"},
		{Name: "Live-Migratable", Type: "string", JSONPath: ".status.conditions[?(@.type=='LiveMigratable')].status", Priority: 1},
		{Name: "Paused", Type: "string", JSONPath: ".status.conditions[?(@.type=='Paused')].status", Priority: 1},
	}
}

// generateSchema runs controller-gen's CRD generator over APIPackage and
// returns the VirtualMachineInstance schema as KubeVirt stores it.
func generateSchema() (*extv1.JSONSchemaProps, error) {
	dangerous := true
	var gen genall.Generator = crdgen.Generator{AllowDangerousTypes: &dangerous}
	rt, err := genall.Generators{&gen}.ForRoots(APIPackage)
	if err != nil {
		return nil, fmt.Errorf("crd: loading %s: %w", APIPackage, err)
	}
	out := memoryOutput{}
	var errs bytes.Buffer
	rt.OutputRules = genall.OutputRules{Default: out}
	rt.ErrorWriter = &errs
	if rt.Run() {
		return nil, fmt.Errorf("crd: controller-gen over %s failed: %s", APIPackage, strings.TrimSpace(errs.String()))
	}
	name := virtv1.VirtualMachineInstanceGroupVersionKind.Group + "_virtualmachineinstances.yaml"
	file, ok := out[name]
	if !ok {
		return nil, fmt.Errorf("crd: controller-gen wrote no %s", name)
	}
	var generated extv1.CustomResourceDefinition
	if err := k8syaml.NewYAMLToJSONDecoder(bytes.NewReader(file.Bytes())).Decode(&generated); err != nil {
		return nil, fmt.Errorf("crd: reading controller-gen's %s: %w", name, err)
	}
	if len(generated.Spec.Versions) == 0 || generated.Spec.Versions[0].Schema == nil {
		return nil, fmt.Errorf("crd: controller-gen's %s has no schema", name)
	}
	schema := generated.Spec.Versions[0].Schema.OpenAPIV3Schema
	replaceBackticks(schema)
	return schema, nil
}

// replaceBackticks turns each backtick in a description into a single quote,
// in the schema and in the properties and items below it, as KubeVirt's
// crd-validation-generator does (its generated Go file quotes the schema in
// backticks). It visits exactly what KubeVirt's sanitizeSchema visits.
func replaceBackticks(s *extv1.JSONSchemaProps) {
	s.Description = strings.ReplaceAll(s.Description, "`", "'")
	if s.Items != nil {
		if s.Items.Schema != nil {
			replaceBackticks(s.Items.Schema)
		}
		for i := range s.Items.JSONSchemas {
			replaceBackticks(&s.Items.JSONSchemas[i])
		}
	}
	for name, p := range s.Properties {
		replaceBackticks(&p)
		s.Properties[name] = p
	}
}

// marshal writes the CRD as YAML without the fields an object gets from the
// server (metadata.creationTimestamp, status).
func marshal(crd *extv1.CustomResourceDefinition) ([]byte, error) {
	j, err := json.Marshal(crd)
	if err != nil {
		return nil, err
	}
	var obj map[string]any
	if err := json.Unmarshal(j, &obj); err != nil {
		return nil, err
	}
	delete(obj, "status")
	if meta, ok := obj["metadata"].(map[string]any); ok {
		delete(meta, "creationTimestamp")
	}
	y, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	header := "# KubeVirt's VirtualMachineInstance CRD, generated by examples/nodeagent/crd\n" +
		"# from " + APIPackage + " (see crd.Generate). Do not edit: run\n" +
		"# `go test ./crd -update` in examples/nodeagent.\n"
	return append([]byte(header), y...), nil
}

// memoryOutput keeps controller-gen's artifacts in memory, by file name.
type memoryOutput map[string]*bytes.Buffer

// Open implements genall.OutputRule.
func (m memoryOutput) Open(_ *loader.Package, path string) (io.WriteCloser, error) {
	b := &bytes.Buffer{}
	m[path] = b
	return nopCloser{b}, nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
