package api

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// checkDecodeDirect fails when the direct path reads data but the
// reference path refuses it or gives another object; it returns whether
// the direct path read it.
func checkDecodeDirect(t *testing.T, name string, data []byte) bool {
	t.Helper()
	got, gotKind, ok := decodeDirect(data)
	if !ok {
		return false
	}
	want, wantKind, err := decodeReference(data)
	if err != nil {
		t.Fatalf("%s: the direct path read a document the reference path refuses (%v):\n%s", name, err, data)
	}
	if gotKind != wantKind || !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: the direct path differs from the reference path:\n got %s %#v\nwant %s %#v", name, gotKind, got, wantKind, want)
	}
	return true
}

// directSeeds are fastYAMLSeeds and, when the shared folder is there,
// KubeVirt's reference VMIs that kvbench measures.
func directSeeds(tb testing.TB) map[string][]byte {
	seeds := fastYAMLSeeds(tb)
	files, _ := filepath.Glob("../../shared/kubevirt-reference/vmis/*.yaml")
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		seeds[f] = data
	}
	return seeds
}

// TestDecodeDirect: every document of the project (samples, goldens, the
// invalid catalogue, KubeVirt's examples) that the direct path reads gives
// the reference path's object, and every valid sample and KubeVirt example
// (what kvbench measures) takes the direct path.
func TestDecodeDirect(t *testing.T) {
	direct := 0
	seeds := directSeeds(t)
	for name, data := range seeds {
		ok := checkDecodeDirect(t, name, data)
		if ok {
			direct++
			continue
		}
		_, _, err := decodeReference(data)
		if err == nil && (strings.HasPrefix(name, "../examples/vmis/") || strings.Contains(name, "kubevirt-reference")) {
			t.Errorf("%s: a valid document does not take the direct path", name)
		}
	}
	t.Logf("%d of %d documents take the direct path", direct, len(seeds))
}

// TestDecodeDirectValues: values at the edges of what the direct path
// reads (nulls, empty collections, quantities, integers and their ranges,
// the address-rewriting KubeVirt decoders, VirtualMachines), against the
// reference path.
func TestDecodeDirectValues(t *testing.T) {
	const vmi = "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata:\n  name: x\n"
	for _, c := range []struct {
		doc    string
		direct bool
	}{
		{vmi + "spec:\n  domain:\n    devices: {}\n", true},
		{vmi + "  labels:\n    a: b\n    c:\n  annotations: {}\n", true},
		{vmi + "  creationTimestamp: null\n", true},
		{vmi + "  creationTimestamp: '2020-01-01T00:00:00Z'\n", false},
		{vmi + "spec:\n  domain:\n    resources:\n      requests:\n        memory: 1Gi\n        cpu: 2\n", true},
		{vmi + "spec:\n  domain:\n    resources:\n      requests:\n        memory: 1.5.5Gi\n", false},
		{vmi + "spec:\n  domain:\n    resources:\n      requests:\n        memory: true\n", false},
		{vmi + "spec:\n  domain:\n    resources:\n      requests:\n        memory: 1e2000\n", false},
		{vmi + "spec:\n  domain:\n    resources:\n      requests:\n        memory: ' 1Gi '\n", true},
		{vmi + "spec:\n  domain:\n    cpu:\n      cores: 4294967295\n", true},
		{vmi + "spec:\n  domain:\n    cpu:\n      cores: 4294967296\n", false},
		{vmi + "spec:\n  domain:\n    cpu:\n      cores: -1\n", false},
		{vmi + "spec:\n  domain:\n    cpu:\n      cores: '2'\n", false},
		{vmi + "spec:\n  domain:\n    cpu:\n      model: 2\n", false},
		{vmi + "spec:\n  domain:\n    cpu:\n      dedicatedCpuPlacement: yes\n", true},
		{vmi + "spec:\n  domain:\n    cpu:\n      dedicatedCpuPlacement: 'yes'\n", false},
		{vmi + "spec:\n  domain:\n    cpu:\n      Cores: 2\n", false},
		{vmi + "spec:\n  domain:\n    cpu:\n      corez: 2\n", false},
		{vmi + "spec:\n  domain:\n    cpu: []\n", false},
		{vmi + "spec:\n  domain:\n    devices:\n      disks: []\n      interfaces:\n      - null\n", true},
		{vmi + "spec:\n  domain:\n    devices:\n      disks: {}\n", false},
		{vmi + "spec:\n  dnsConfig:\n    nameservers:\n    - 8.8.8.8\n", false},
		{vmi + "spec:\n  dnsConfig:\n    searches:\n    - a.b\n", true},
		{vmi + "spec:\n  networks:\n  - name: a\n    pod:\n      vmNetworkCIDR: 10.0.2.0/24\n", false},
		{vmi + "spec:\n  networks:\n  - name: a\n    pod: {}\n", true},
		{vmi + "spec:\n  domain:\n    devices:\n      interfaces:\n      - name: a\n        dhcpOptions:\n          ntpServers:\n          - 1.2.3.4\n", false},
		{vmi + "spec:\n  domain:\n    devices:\n      interfaces:\n      - name: a\n        dhcpOptions:\n          bootFileName: x\n", true},
		{vmi + "spec: null\n", true},
		{vmi + "spec:\n  domain:\n    devices:\n      gpus:\n      - name: g\n        claimName: c\n      - name: h\n        requestName: null\n", true},
		{vmi + "spec:\n  readinessProbe:\n    tcpSocket:\n      port: 22\n", true},
		{vmi + "spec:\n  readinessProbe:\n    httpGet:\n      port: http\n", true},
		{vmi + "spec:\n  readinessProbe:\n    tcpSocket:\n      port: 2147483648\n", false},
		{vmi + "status:\n  phase: Running\n", true},
		{vmi + "kind: VirtualMachine\n", false},
		{"apiVersion: kubevirt.io/v1alpha3\nkind: VirtualMachineInstance\n", true},
		{"apiVersion: kubevirt.io/v2\nkind: VirtualMachineInstance\n", false},
		{"apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: v\nspec:\n  runStrategy: Always\n  template:\n    spec:\n      domain:\n        devices: {}\n", true},
		{"apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: v\nspec:\n  template:\n    spec: {}\n", false},
		{"apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: v\nspec:\n  running: true\n  instancetype:\n    name: u1\n  template:\n    metadata:\n      annotations:\n        a: b\n    spec: {}\n", true},
		{`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance"}`, false},
	} {
		if got := checkDecodeDirect(t, c.doc, []byte(c.doc)); got != c.direct {
			t.Errorf("%q: direct path %v, want %v", c.doc, got, c.direct)
		}
	}
}

// FuzzDecodeDirect checks the direct path against the reference path on
// the project's documents and their mutations: whenever it reads a
// document, the reference path accepts it and gives the same object.
func FuzzDecodeDirect(f *testing.F) {
	for _, data := range directSeeds(f) {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecodeDirect(t, "input", data)
	})
}

// TestDecodeDirectOneDocument: streams of several documents, and a
// document marker anywhere but first, leave the direct path.
func TestDecodeDirectOneDocument(t *testing.T) {
	const doc = "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata:\n  name: x\n"
	for _, c := range []struct {
		data   string
		direct bool
	}{
		{doc, true},
		{"---\n" + doc, true},
		{"--- # first\n" + doc, false}, // left to the YAML library
		{doc + "---\n", false},
		{doc + "...\n", false},
		{doc + "---\n" + doc, false},
		{doc + "--- \n", false},
		{"%YAML 1.1\n---\n" + doc, false},
		{"---\n---\n" + doc, false},
	} {
		if got := checkDecodeDirect(t, c.data, []byte(c.data)); got != c.direct {
			t.Errorf("%q: direct path %v, want %v", c.data, got, c.direct)
		}
	}
}
