package api

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

const vmiHeader = "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata:\n  name: t\n"

// TestDecodeErrors checks that bad input is refused with the exact message
// (expected messages written by hand from the rules in decode.go).
func TestDecodeErrors(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"empty", "", "empty document: expected a VirtualMachineInstance or VirtualMachine"},
		{"blank", " \n\t\n", "empty document: expected a VirtualMachineInstance or VirtualMachine"},
		{"comments only", "# nothing\n---\n# here\n", "empty document: expected a VirtualMachineInstance or VirtualMachine"},
		{"null", "null\n", "empty document: expected a VirtualMachineInstance or VirtualMachine"},
		{"yaml list", "- a\n- b\n", "document is not an object: expected a VirtualMachineInstance or VirtualMachine"},
		{"json list", `[{"kind":"VirtualMachineInstance"}]`, "document is not an object: expected a VirtualMachineInstance or VirtualMachine"},
		{"scalar", "hello\n", "document is not an object: expected a VirtualMachineInstance or VirtualMachine"},
		{"two documents", vmiHeader + "---\n" + vmiHeader, "several YAML documents (the second starts on line 6): expected exactly one VirtualMachineInstance or VirtualMachine"},
		{"two documents after end marker", vmiHeader + "...\n" + vmiHeader, "several YAML documents (the second starts on line 6): expected exactly one VirtualMachineInstance or VirtualMachine"},
		{"two json values", `{"kind":"VirtualMachineInstance"} {}`, "several JSON values (the second starts on line 1, byte 34): expected exactly one VirtualMachineInstance or VirtualMachine object"},
		{"bad yaml", "a: b: c\n", "invalid YAML: line 1: mapping values are not allowed in this context"},
		{"tab indentation", "a:\n\tb: c\n", "invalid YAML: line 2: found character that cannot start any token"},
		{"duplicate yaml key", vmiHeader + "kind: VirtualMachineInstance\n", `invalid YAML: line 5: duplicate key "kind"`},
		{"duplicate nested yaml keys", vmiHeader + "spec:\n  domain:\n    cpu: {cores: 1, cores: 2}\n    cpu: {}\n", `invalid YAML: line 7: duplicate key "cores"; line 8: duplicate key "cpu"`},
		{"duplicate json key", `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","spec":{"domain":{"devices":{},"devices":{}}}}`, "spec.domain.devices: duplicate field"},
		{"no kind", "apiVersion: kubevirt.io/v1\nmetadata: {name: t}\n", "kind: Required value: must be VirtualMachineInstance or VirtualMachine"},
		{"wrong kind", "apiVersion: kubevirt.io/v1\nkind: Pod\n", `kind: Unsupported value: "Pod": supported values: "VirtualMachineInstance", "VirtualMachine"`},
		{"kind case", "apiVersion: kubevirt.io/v1\nkind: virtualmachineinstance\n", `kind: Unsupported value: "virtualmachineinstance": supported values: "VirtualMachineInstance", "VirtualMachine"`},
		{"kind not a string", "apiVersion: kubevirt.io/v1\nkind: 5\n", "kind: must be a string"},
		{"no apiVersion", "kind: VirtualMachineInstance\n", "apiVersion: Required value: must be kubevirt.io/v1"},
		{"wrong apiVersion", "apiVersion: v1\nkind: VirtualMachineInstance\n", `apiVersion: Unsupported value: "v1": supported values: "kubevirt.io/v1", "kubevirt.io/v1alpha3"`},
		{"unknown top-level field", vmiHeader + "speck: {}\n", "speck: unknown field"},
		{"misspelt disk field", vmiHeader + "spec:\n  domain:\n    devices:\n      disks:\n      - name: a\n        dsk: {}\n", "spec.domain.devices.disks[0].dsk: unknown field"},
		{"field in wrong case", vmiHeader + "spec:\n  Domain: {}\n", "spec.Domain: unknown field"},
		{"unknown field in pod network", vmiHeader + "spec:\n  networks:\n  - name: default\n    pod:\n      cidr: 10.0.0.0/8\n", "spec.networks[0].pod.cidr: unknown field"},
		{"unknown field in dhcp options", vmiHeader + "spec:\n  domain:\n    devices:\n      interfaces:\n      - name: a\n        dhcpOptions:\n          ntp: [1.2.3.4]\n", "spec.domain.devices.interfaces[0].dhcpOptions.ntp: unknown field"},
		{"several unknown fields, sorted", vmiHeader + "spec:\n  zeta: 1\n  alpha: 2\n", "spec.alpha: unknown field; spec.zeta: unknown field"},
		{"unknown field in metadata", "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata:\n  nam: t\n", "metadata.nam: unknown field"},
		{"unknown field in VM template", "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: v}\nspec:\n  template:\n    spec:\n      domian: {}\n", "spec.template.spec.domian: unknown field"},
		{"wrong type", vmiHeader + "spec:\n  domain:\n    cpu:\n      cores: two\n", "spec.domain.cpu.cores: cannot decode string as a non-negative integer (uint32)"},
		{"negative unsigned", vmiHeader + "spec:\n  domain:\n    cpu:\n      cores: -1\n", "spec.domain.cpu.cores: cannot decode number -1 as a non-negative integer (uint32)"},
		{"wrong type in list", vmiHeader + "spec:\n  domain:\n    devices:\n      disks:\n      - name: a\n      - name: b\n        bootOrder: first\n", "spec.domain.devices.disks[1].bootOrder: cannot decode string as a non-negative integer (uint)"},
		{"bad quantity", vmiHeader + "spec:\n  domain:\n    resources:\n      requests:\n        memory: 1.5.5Gi\n", "spec.domain.resources.requests.memory: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
		{"bad guest quantity", vmiHeader + "spec:\n  domain:\n    memory:\n      guest: lots\n", "spec.domain.memory.guest: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"},
		{"object for a string", vmiHeader + "spec:\n  hostname: {a: b}\n", "spec.hostname: cannot decode object as a string"},
		{"too large", vmiHeader + "spec:\n  hostname: " + strings.Repeat("a", 3<<20) + "\n", "document of 3145823 bytes is larger than 3145728 bytes (3 MiB, the Kubernetes API server's limit)"},
		{"VM without template", "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: v}\nspec: {}\n", "spec.template: Required value: a VirtualMachine needs a template to make a VirtualMachineInstance from"},
		{"VM without run strategy", "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: v}\nspec:\n  template: {spec: {domain: {devices: {}}}}\n", "spec.runStrategy: Required value: a VirtualMachine needs a run strategy (or the deprecated spec.running)"},
		{"VM with running and run strategy", "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: v}\nspec:\n  running: true\n  runStrategy: Always\n  template: {spec: {domain: {devices: {}}}}\n", "spec.runStrategy: spec.running and spec.runStrategy are mutually exclusive (spec.running is deprecated)"},
		{"VM with unknown run strategy", "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: v}\nspec:\n  runStrategy: Sometimes\n  template: {spec: {domain: {devices: {}}}}\n", "spec.runStrategy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"RerunOnFailure\", \"Manual\", \"Halted\", \"Once\""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vmi, err := Decode([]byte(c.in))
			if err == nil {
				t.Fatalf("decoded %v, want error %q", vmi, c.want)
			}
			var de *InvalidError
			if !errors.As(err, &de) || de.Stage != StageDecode {
				t.Fatalf("error %T is not an *InvalidError", err)
			}
			if err.Error() != c.want {
				t.Errorf("error\n got: %s\nwant: %s", err, c.want)
			}
		})
	}
}

// TestDecodeFieldErrors checks that errors at a place carry field.Errors
// of the right type on the right path.
func TestDecodeFieldErrors(t *testing.T) {
	_, err := Decode([]byte(vmiHeader + "spec:\n  domain:\n    devices:\n      disks:\n      - name: a\n        dsk: {}\n"))
	var de *InvalidError
	if !errors.As(err, &de) || de.Stage != StageDecode || len(de.Errors) != 1 {
		t.Fatalf("got %v, want one field error", err)
	}
	if e := de.Errors[0]; e.Type != field.ErrorTypeForbidden || e.Field != "spec.domain.devices.disks[0].dsk" {
		t.Errorf("got %s %s, want Forbidden spec.domain.devices.disks[0].dsk", e.Type, e.Field)
	}
}

// TestDecodeAccepts checks what Decode makes of valid input.
func TestDecodeAccepts(t *testing.T) {
	t.Run("yaml vmi", func(t *testing.T) {
		vmi := mustDecode(t, vmiHeader+"  namespace: ns\nspec:\n  domain:\n    devices: {}\n")
		if vmi.Name != "t" || vmi.Namespace != "ns" || vmi.Kind != KindVMI || vmi.APIVersion != APIVersion {
			t.Errorf("got %s/%s %s %s", vmi.Namespace, vmi.Name, vmi.Kind, vmi.APIVersion)
		}
	})
	t.Run("json vmi", func(t *testing.T) {
		vmi := mustDecode(t, `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"j"},"spec":{"domain":{"cpu":{"cores":3}}}}`)
		if vmi.Name != "j" || vmi.Spec.Domain.CPU == nil || vmi.Spec.Domain.CPU.Cores != 3 {
			t.Errorf("got %+v", vmi)
		}
	})
	t.Run("yaml flow mapping", func(t *testing.T) {
		vmi := mustDecode(t, `{apiVersion: kubevirt.io/v1, kind: VirtualMachineInstance, metadata: {name: f}}`)
		if vmi.Name != "f" {
			t.Errorf("got name %q", vmi.Name)
		}
	})
	t.Run("json followed by a yaml comment", func(t *testing.T) {
		vmi := mustDecode(t, `{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"c"}}`+"\n# done\n")
		if vmi.Name != "c" {
			t.Errorf("got name %q", vmi.Name)
		}
	})
	t.Run("leading and trailing markers", func(t *testing.T) {
		vmi := mustDecode(t, "%YAML 1.1\n---\n"+vmiHeader+"...\n")
		if vmi.Name != "t" {
			t.Errorf("got name %q", vmi.Name)
		}
	})
	t.Run("v1alpha3 is read as v1", func(t *testing.T) {
		vmi := mustDecode(t, "apiVersion: kubevirt.io/v1alpha3\nkind: VirtualMachineInstance\nmetadata: {name: old}\n")
		if vmi.APIVersion != APIVersion {
			t.Errorf("apiVersion %q, want %q", vmi.APIVersion, APIVersion)
		}
	})
	t.Run("block scalar holding a marker", func(t *testing.T) {
		vmi := mustDecode(t, vmiHeader+"spec:\n  volumes:\n  - name: c\n    cloudInitNoCloud:\n      userData: |\n        ---\n        a: b\n")
		if got := vmi.Spec.Volumes[0].CloudInitNoCloud.UserData; got != "---\na: b\n" {
			t.Errorf("userData %q", got)
		}
	})
	t.Run("virtual machine", func(t *testing.T) {
		vmi := mustDecode(t, `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: vm1
  namespace: team
  labels: {from: vm}
spec:
  runStrategy: Always
  template:
    metadata:
      name: ignored
      labels: {from: template}
      annotations: {a: b}
    spec:
      domain:
        devices: {}
        memory: {guest: 1Gi}
`)
		if vmi.Name != "vm1" || vmi.Namespace != "team" || vmi.Kind != KindVMI {
			t.Errorf("got %s/%s kind %s", vmi.Namespace, vmi.Name, vmi.Kind)
		}
		if vmi.Labels["from"] != "template" || vmi.Annotations["a"] != "b" {
			t.Errorf("labels %v annotations %v, want the template's", vmi.Labels, vmi.Annotations)
		}
		if vmi.Spec.Domain.Memory == nil || vmi.Spec.Domain.Memory.Guest.String() != "1Gi" {
			t.Errorf("template spec not carried over: %+v", vmi.Spec.Domain.Memory)
		}
	})
	t.Run("pod network cidr is tidied", func(t *testing.T) {
		vmi := mustDecode(t, vmiHeader+"spec:\n  networks:\n  - name: default\n    pod:\n      vmNetworkCIDR: 10.0.2.0/24\n")
		if got := vmi.Spec.Networks[0].Pod.VMNetworkCIDR; got != "10.0.2.0/24" {
			t.Errorf("cidr %q", got)
		}
	})
}

func TestDecodeTestdata(t *testing.T) {
	for _, name := range []string{"vmi-small.yaml", "vm-server.yaml", "vmi-windows.yaml"} {
		if _, err := Decode(readTestdata(t, name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func mustDecode(t testing.TB, s string) *vmiT {
	t.Helper()
	vmi, err := Decode([]byte(s))
	if err != nil {
		t.Fatalf("Decode: %v\ninput:\n%s", err, strings.TrimSpace(s))
	}
	return vmi
}

// TestDecodeConcurrent runs the whole pipeline from several goroutines at
// once (the field tables are shared); run it with -race.
func TestDecodeConcurrent(t *testing.T) {
	data := readTestdata(t, "vmi-windows.yaml")
	done := make(chan error)
	for range 8 {
		go func() {
			vmi, err := Decode(data)
			if err == nil {
				Default(vmi, ClusterConfig{})
				if errs := Validate(vmi); len(errs) > 0 {
					err = errs.ToAggregate()
				}
			}
			done <- err
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// KubeVirt's VM controller records a VM's instance type and preference on the
// VMIs it creates with these annotations (kubevirt.io/api core/v1 constants);
// the default kind of both matchers is the cluster-wide one.
func TestDecodeRecordsInstancetypeAndPreference(t *testing.T) {
	doc := `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: vm1, namespace: ns1}
spec:
  runStrategy: Always
  instancetype: {name: u1.small}
  preference: {kind: VirtualMachinePreference, name: fedora}
  template:
    metadata:
      annotations: {keep: me}
    spec:
      domain:
        devices: {}
`
	vmi, err := Decode([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"keep":                                  "me",
		"kubevirt.io/cluster-instancetype-name": "u1.small",
		"kubevirt.io/preference-name":           "fedora",
	}
	if len(vmi.Annotations) != len(want) {
		t.Fatalf("annotations = %v, want %v", vmi.Annotations, want)
	}
	for k, v := range want {
		if vmi.Annotations[k] != v {
			t.Errorf("annotation %s = %q, want %q", k, vmi.Annotations[k], v)
		}
	}
}
