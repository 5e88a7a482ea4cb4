package main

import (
	"encoding/json"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// invalidStream is a stream of three documents — valid, refused by the
// decoder, refused by validation (a VirtualMachine) — and a fourth, for a
// host layout only, refused by the converter.
const invalidStream = `# a valid VMI
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: good
spec:
  domain:
    memory: {guest: 64Mi}
    devices: {}
---
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: typo
spec:
  domian: {}
---
# a comment-only document is not counted
---
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: vm
  namespace: team
spec:
  runStrategy: Always
  template:
    spec:
      domain:
        memory: {guest: 64Mi}
        devices:
          disks:
          - name: root
            disk: {bus: floppy}
---
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: multus
spec:
  domain:
    memory: {guest: 64Mi}
    devices:
      interfaces:
      - {name: blue, bridge: {}}
  networks:
  - name: blue
    multus: {networkName: blue-net}
`

// TestValidateJSON: -o json gives every document and every problem, with
// file, document index, line (checked against the stream above by hand),
// stage, path, type and message; the same problems are error lines on
// stderr; the exit status is 1.
func TestValidateJSON(t *testing.T) {
	r := expect(t, exitInvalid, invalidStream, "validate", "-o", "json", "-f", "-", "--layout", "host")
	var got validation
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("stdout is not validate's JSON: %v\n%s", err, r.stdout)
	}
	wantDocs := []validatedInput{
		{File: "<stdin>", Document: 1, Line: 1, Kind: "VirtualMachineInstance", Namespace: "default", Name: "good", Valid: true},
		{File: "<stdin>", Document: 2, Line: 11, Valid: false},
		{File: "<stdin>", Document: 3, Line: 20, Kind: "VirtualMachine", Namespace: "team", Name: "vm", Valid: false},
		{File: "<stdin>", Document: 4, Line: 36, Kind: "VirtualMachineInstance", Namespace: "default", Name: "multus", Valid: false},
	}
	if !reflect.DeepEqual(got.Documents, wantDocs) || got.Valid {
		t.Errorf("valid %v, documents:\n%+v\nwant\n%+v", got.Valid, got.Documents, wantDocs)
	}
	wantProblems := []problem{
		{File: "<stdin>", Document: 2, Line: 16, Stage: "decode", Path: "spec.domian", Type: "FieldValueForbidden", Message: "unknown field"},
		{File: "<stdin>", Document: 3, Line: 34, Stage: "validate", Path: "spec.template.spec.domain.devices.disks[0].disk.bus", Type: "FieldValueNotSupported",
			Message: `Unsupported value: "floppy": supported values: "virtio", "scsi", "sata", "usb"`},
		{File: "<stdin>", Document: 3, Line: 33, Stage: "validate", Path: "spec.template.spec.domain.devices.disks[0].name", Type: "FieldValueInvalid",
			Message: `Invalid value: "root": no volume of this name in spec.volumes`},
		{File: "<stdin>", Document: 4, Line: 48, Stage: "convert", Path: "spec.networks[0].multus.networkName", Type: "FieldValueInvalid"},
	}
	if len(got.Problems) != len(wantProblems) {
		t.Fatalf("%d problems, want %d: %+v", len(got.Problems), len(wantProblems), got.Problems)
	}
	for i, w := range wantProblems {
		g := got.Problems[i]
		g.doc = document{}
		if w.Message == "" { // the converter's message names the host layout's map
			if !strings.HasPrefix(g.Message, `Invalid value: "blue-net": `) {
				t.Errorf("problem %d message %q", i, g.Message)
			}
			g.Message = ""
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("problem %d:\n%+v\nwant\n%+v", i, g, w)
		}
		line := "error: <stdin>:" + strconv.Itoa(w.Line) + " (document " + strconv.Itoa(w.Document) + " of 4): " + w.Path + ": "
		if !strings.Contains(r.stderr, line) {
			t.Errorf("stderr lacks %q:\n%s", line, r.stderr)
		}
	}
	// With KubeVirt's layout the multus network needs no mapping.
	r = expect(t, exitInvalid, invalidStream, "validate", "-o", "json", "-")
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || len(got.Problems) != 3 || !got.Documents[3].Valid {
		t.Errorf("kubevirt layout: %v, %+v", err, got)
	}
}

// TestValidateText: one line per document on stdout, the problems on
// stderr; valid input exits 0 with an empty stderr.
func TestValidateText(t *testing.T) {
	r := expect(t, exitInvalid, invalidStream, "validate", "-")
	want := `<stdin>:1 (document 1 of 4): VirtualMachineInstance default/good: valid
<stdin>:11 (document 2 of 4): invalid
<stdin>:20 (document 3 of 4): VirtualMachine team/vm: invalid
<stdin>:36 (document 4 of 4): VirtualMachineInstance default/multus: valid
`
	if r.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", r.stdout, want)
	}
	if n := strings.Count(r.stderr, "error: "); n != 3 {
		t.Errorf("%d error lines, want 3:\n%s", n, r.stderr)
	}
	r = expect(t, exitOK, "", "validate", "-f", "../vmis")
	if n := strings.Count(r.stdout, ": valid\n"); n != 12 || r.stderr != "" {
		t.Errorf("the sample VMIs: %d valid, want 12; stderr:\n%s\nstdout:\n%s", n, r.stderr, r.stdout)
	}
	expect(t, exitUsage, "", "validate", "-o", "yaml", "-f", filepath.Join(golden, "basic-minimal", "vmi.yaml"))
}
