package pipeline_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

const vmiDoc = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: a
  namespace: ns
  labels: LABELS
spec:
  domain:
    memory: {guest: 64Mi}
    devices:
      interfaces:
      - {name: blue, bridge: {}}
  networks:
  - {name: blue, multus: {networkName: blue-net}}
`

// vmDoc is vmiDoc as a VirtualMachine's template.
const vmDoc = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: a
  namespace: ns
spec:
  runStrategy: Always
  template:
    metadata:
      labels: LABELS
    spec:
      domain:
        memory: {guest: 64Mi}
        devices:
          interfaces:
          - {name: blue, bridge: {}}
      networks:
      - {name: blue, multus: {networkName: blue-net}}
`

func doc(tmpl, labels string) []byte { return []byte(strings.Replace(tmpl, "LABELS", labels, 1)) }

func hostConfig(mapped bool) pipeline.Config {
	opts := convert.KubeVirtOptions()
	h := convert.HostLayout{StateDir: "/s", ImageStore: "/i"}
	if mapped {
		h.Networks = map[string]convert.InterfaceAttachment{"blue-net": {Type: "bridge", Source: "br0"}}
	}
	opts.Layout = h
	return pipeline.Config{Options: opts}
}

// TestInvalidErrorByStage: whatever stage refuses the input, the caller
// gets an *InvalidError that is ErrInvalid, names the stage, lists the
// field errors at the paths of the document it wrote, and unwraps to them.
func TestInvalidErrorByStage(t *testing.T) {
	for _, c := range []struct {
		name  string
		data  []byte
		cfg   pipeline.Config
		stage string
		paths []string
	}{
		{"decode: unknown field", []byte("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata: {name: a}\nspec: {domian: {}}\n"),
			hostConfig(true), "decode", []string{"spec.domian"}},
		{"decode: not YAML", []byte("{"), hostConfig(true), "decode", nil},
		{"validate: bad label value", doc(vmiDoc, `{k: "a b"}`), hostConfig(true), "validate", []string{"metadata.labels[k]"}},
		{"validate in a VM", doc(vmDoc, `{k: "a b"}`), hostConfig(true), "validate", []string{"spec.template.metadata.labels[k]"}},
		{"convert: unmapped network", doc(vmiDoc, `{}`), hostConfig(false), "convert", []string{"spec.networks[0].multus.networkName"}},
		{"convert in a VM", doc(vmDoc, `{}`), hostConfig(false), "convert", []string{"spec.template.spec.networks[0].multus.networkName"}},
		{"create rules on request", doc(vmiDoc, `{kubevirt.io/nodeName: n1}`), pipeline.Config{Options: hostConfig(true).Options, Create: true},
			"validate", []string{"metadata.labels[kubevirt.io/nodeName]"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := pipeline.FromDocument(c.data, c.cfg)
			var ie *pipeline.InvalidError
			if !errors.As(err, &ie) || !errors.Is(err, pipeline.ErrInvalid) {
				t.Fatalf("err = %v (%T), want an *InvalidError", err, err)
			}
			if ie.Stage != c.stage {
				t.Errorf("stage %q, want %q", ie.Stage, c.stage)
			}
			var got []string
			for _, fe := range ie.Errors {
				got = append(got, fe.Field)
			}
			if !reflect.DeepEqual(got, c.paths) {
				t.Errorf("paths %q, want %q (%v)", got, c.paths, err)
			}
			var fe *field.Error
			if len(c.paths) > 0 && (!errors.As(err, &fe) || fe.Field != c.paths[0]) {
				t.Errorf("errors.As finds %v, want the field error at %s", fe, c.paths[0])
			}
			if _, derr := api.Decode(c.data); (derr != nil) != (c.stage == "decode") || derr != nil && derr.Error() != err.Error() {
				t.Errorf("api.Decode says %v at stage %s, want the decoder's own error at stage decode only", derr, c.stage)
			}
			if len(c.paths) == 1 && !strings.HasPrefix(err.Error(), c.paths[0]+": ") {
				t.Errorf("message %q does not start with its path", err)
			}
		})
	}
}

// TestAdmittedLabelsAccepted: by default the pipeline takes the VMI as the
// API server admitted it; KubeVirt's own labels do not refuse it.
func TestAdmittedLabelsAccepted(t *testing.T) {
	r, err := pipeline.FromDocument(doc(vmiDoc, `{kubevirt.io/nodeName: n1}`), hostConfig(true))
	if err != nil || r.Domain == nil || len(r.XML) == 0 {
		t.Fatalf("FromDocument: %v", err)
	}
}

// TestFromVMI: the object is defaulted on a copy and gives the same domain
// as its document; the caller's VMI is untouched.
func TestFromVMI(t *testing.T) {
	cfg := hostConfig(true)
	fromDoc, err := pipeline.FromDocument(doc(vmiDoc, `{}`), cfg)
	if err != nil {
		t.Fatal(err)
	}
	vmi, err := api.Decode(doc(vmiDoc, `{}`))
	if err != nil {
		t.Fatal(err)
	}
	before := vmi.DeepCopy()
	fromVMI, err := pipeline.FromVMI(vmi, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if string(fromVMI.XML) != string(fromDoc.XML) || fromVMI.Kind != api.KindVMI {
		t.Errorf("FromVMI gives another domain than FromDocument (kind %q)", fromVMI.Kind)
	}
	if !reflect.DeepEqual(vmi, before) {
		t.Error("FromVMI modified its argument")
	}
	if fromVMI.VMI == vmi {
		t.Error("Result.VMI is the caller's object, not a defaulted copy")
	}
	if _, err := pipeline.FromVMI(nil, cfg); err == nil || errors.Is(err, pipeline.ErrInvalid) {
		t.Errorf("nil VMI: %v, want a plain error", err)
	}
	if _, err := pipeline.FromVMI(&v1.VirtualMachineInstance{}, pipeline.Config{}); !errors.Is(err, pipeline.ErrInvalid) {
		t.Errorf("empty VMI: %v, want ErrInvalid (no name)", err)
	}
}
