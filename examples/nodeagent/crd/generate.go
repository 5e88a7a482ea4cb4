// Package crd holds KubeVirt's VirtualMachineInstance, VirtualMachine and
// VirtualMachineInstanceMigration CustomResourceDefinitions as KubeVirt's
// operator installs them, and the generator that reproduces them from the
// published kubevirt.io/api module.
//
// The committed files (one per Definition, in this folder) are what the
// node agent's and the control plane's tests and .ci/cluster.sh install, so
// none needs a generator at run time. `go test ./crd -update` (from
// examples/nodeagent) rewrites them; a normal run regenerates them and fails
// when they differ.
//
// It lives in the node agent's module, not the library's, because the
// generator needs sigs.k8s.io/controller-tools, which an embedder of the
// library must not inherit.
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

// APIPackage is the Go package whose types the schemas are generated from:
// the version of kubevirt.io/api this module requires decides them.
const APIPackage = "kubevirt.io/api/core/v1"

// Definition is one of KubeVirt's CRDs as its operator declares it
// (pkg/virt-operator/resource/generate/components/crds.go): what is not the
// schema.
type Definition struct {
	// Names are the CRD's names; Names.Plural also names the CRD
	// (<plural>.kubevirt.io) and its file (<plural>.kubevirt.io.yaml).
	Names extv1.CustomResourceDefinitionNames
	// Columns are the printer columns of every version.
	Columns []extv1.CustomResourceColumnDefinition
	// Status tells whether every version has the status subresource.
	Status bool
}

// Name is the CRD's object name.
func (d Definition) Name() string { return d.Names.Plural + "." + virtv1.SchemeGroupVersion.Group }

// File is the name of the committed CRD in this folder.
func (d Definition) File() string { return d.Name() + ".yaml" }

// The definitions Generate makes, as crds.go of KubeVirt v1.8.0 declares
// them.
var (
	// VirtualMachineInstance: no status subresource (status is written
	// with the object, as virt-handler and the node agent do).
	VirtualMachineInstance = Definition{
		Names: names("virtualmachineinstances", "virtualmachineinstance", "VirtualMachineInstance", "vmi", "vmis"),
		Columns: []extv1.CustomResourceColumnDefinition{
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
			{Name: "Phase", Type: "string", JSONPath: ".status.phase"},
			{Name: "IP", Type: "string", JSONPath: ".status.interfaces[0].ipAddress"},
			{Name: "NodeName", Type: "string", JSONPath: ".status.nodeName"},
			{Name: "Ready", Type: "string", JSONPath: ".status.conditions[?(@.type=='Ready')].status"},
			{Name: "Live-Migratable", Type: "string", JSONPath: ".status.conditions[?(@.type=='LiveMigratable')].status", Priority: 1},
			{Name: "Paused", Type: "string", JSONPath: ".status.conditions[?(@.type=='Paused')].status", Priority: 1},
		},
	}
	// VirtualMachine: with the status subresource, which the VM
	// controller writes.
	VirtualMachine = Definition{
		Names: names("virtualmachines", "virtualmachine", "VirtualMachine", "vm", "vms"),
		Columns: []extv1.CustomResourceColumnDefinition{
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
			{Name: "Status", Description: "Human Readable Status", Type: "string", JSONPath: ".status.printableStatus"},
			{Name: "Ready", Type: "string", JSONPath: ".status.conditions[?(@.type=='Ready')].status"},
		},
		Status: true,
	}
	// VirtualMachineInstanceMigration: with the status subresource.
	VirtualMachineInstanceMigration = Definition{
		Names: names("virtualmachineinstancemigrations", "virtualmachineinstancemigration", "VirtualMachineInstanceMigration", "vmim", "vmims"),
		Columns: []extv1.CustomResourceColumnDefinition{
			{Name: "Phase", Type: "string", JSONPath: ".status.phase", Description: "The current phase of VM instance migration"},
			{Name: "VMI", Type: "string", JSONPath: ".spec.vmiName", Description: "The name of the VMI to perform the migration on"},
		},
		Status: true,
	}
)

// Definitions are the CRDs Generate makes, in the order they are
// installed.
var Definitions = []Definition{VirtualMachineInstance, VirtualMachine, VirtualMachineInstanceMigration}

// names are a CRD's names in category "all", as KubeVirt gives each.
func names(plural, singular, kind string, short ...string) extv1.CustomResourceDefinitionNames {
	return extv1.CustomResourceDefinitionNames{Plural: plural, Singular: singular, Kind: kind, ShortNames: short, Categories: []string{"all"}}
}

// Generate builds every CRD of Definitions the way KubeVirt v1.8.0 does and
// returns each as YAML, by file name (Definition.File).
//
// The schemas are KubeVirt's hack/generate.sh step: controller-gen's
// `crd:allowDangerousTypes=true paths=<kubevirt.io/api/core/v1>`, the first
// version's openAPIV3Schema taken from the CRD of each kind it writes,
// backticks in descriptions turned into single quotes
// (tools/crd-validation-generator); that generated schema is what
// pkg/virt-operator/resource/generate/components/validations_generated.go
// holds. The rest of each object is crds.go's New…Crd: the "kubevirt.io"
// label, group, names and short names, the versions kubevirt.io/api
// declares (ApiSupportedVersions: v1 served and stored, v1alpha3 served and
// deprecated), the printer columns, the schema on every version, and the
// status subresource where KubeVirt has one (VirtualMachine,
// VirtualMachineInstanceMigration; the VirtualMachineInstance has none:
// its status is written with the object).
//
// Checked against KubeVirt v1.8.0's source: each generated openAPIV3Schema
// is equal (decoded, compared as extv1.JSONSchemaProps) to its entry of
// validations_generated.go ("virtualmachineinstance", "virtualmachine",
// "virtualmachineinstancemigration"), and names, columns, versions and
// subresources were compared with crds.go by reading.
//
// Generate loads kubevirt.io/api/core/v1 with `go list`, so it runs inside
// this module with the module's dependencies downloaded.
func Generate() (map[string][]byte, error) {
	schemas, err := generateSchemas()
	if err != nil {
		return nil, err
	}
	out := map[string][]byte{}
	for _, d := range Definitions {
		schema, ok := schemas[d.Names.Plural]
		if !ok {
			return nil, fmt.Errorf("crd: controller-gen wrote no CRD of %s", d.Names.Kind)
		}
		y, err := marshal(d.object(schema))
		if err != nil {
			return nil, err
		}
		out[d.File()] = y
	}
	return out, nil
}

// object is the CRD of d with schema on every version.
func (d Definition) object(schema *extv1.JSONSchemaProps) *extv1.CustomResourceDefinition {
	crd := &extv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   d.Name(),
			Labels: map[string]string{virtv1.AppLabel: ""},
		},
		Spec: extv1.CustomResourceDefinitionSpec{
			Group: virtv1.SchemeGroupVersion.Group,
			Scope: extv1.NamespaceScoped,
			Names: d.Names,
		},
	}
	for _, v := range virtv1.ApiSupportedVersions {
		v := *v.DeepCopy()
		v.AdditionalPrinterColumns = d.Columns
		if d.Status {
			v.Subresources = &extv1.CustomResourceSubresources{Status: &extv1.CustomResourceSubresourceStatus{}}
		}
		v.Schema = &extv1.CustomResourceValidation{OpenAPIV3Schema: schema.DeepCopy()}
		crd.Spec.Versions = append(crd.Spec.Versions, v)
	}
	return crd
}

// generateSchemas runs controller-gen's CRD generator over APIPackage and
// returns the schema of each kind it made a CRD of, by plural, as KubeVirt
// stores them.
func generateSchemas() (map[string]*extv1.JSONSchemaProps, error) {
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
	schemas := map[string]*extv1.JSONSchemaProps{}
	for _, d := range Definitions {
		name := virtv1.SchemeGroupVersion.Group + "_" + d.Names.Plural + ".yaml"
		file, ok := out[name]
		if !ok {
			continue
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
		schemas[d.Names.Plural] = schema
	}
	return schemas, nil
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
	header := "# KubeVirt's " + crd.Spec.Names.Kind + " CRD, generated by examples/nodeagent/crd\n" +
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
