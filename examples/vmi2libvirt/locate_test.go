package main

import (
	"bytes"
	"testing"
)

const located = `apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: vm
  labels:
    kubevirt.io/size: small
spec:
  template:
    spec:
      domain:
        devices:
          disks:
          - name: root
            disk: {bus: floppy}
          - name: data
            disk:
              bus: virtio
      volumes: &vols
      - name: root
        containerDisk: {image: x}
  other: *vols
`

// TestFieldLine: a field path gives the line its key (or list item) is
// written on; a field that is not written, its nearest written parent's.
func TestFieldLine(t *testing.T) {
	for _, c := range []struct {
		path string
		line int
	}{
		{"apiVersion", 1},
		{"metadata.name", 4},
		{"metadata.labels[kubevirt.io/size]", 6},
		{"spec.template.spec.domain.devices.disks[0].disk.bus", 14},
		{"spec.template.spec.domain.devices.disks[1]", 15},
		{"spec.template.spec.domain.devices.disks[1].disk.bus", 17},
		{"spec.template.spec.domain.devices.disks[1].disk.cache", 16},
		{"spec.template.spec.domain.devices.disks[7].name", 12},
		{"spec.template.spec.domain.resources.requests", 10},
		{"spec.other[0].containerDisk.image", 20},
		{"spec.template.spec.volumes[0].name", 19},
		{"status.phase", 0},
		{"", 0},
		{"metadata.name[0]", 4},
		{"spec..template[", 8},
	} {
		if got := fieldLine([]byte(located), c.path); got != c.line {
			t.Errorf("fieldLine(%q) = %d, want %d", c.path, got, c.line)
		}
	}
	for _, doc := range []string{"", "{", "- a\n- b\n", "a: [1, 2"} {
		if got := fieldLine([]byte(doc), "a"); got != 0 {
			t.Errorf("fieldLine(%q, a) = %d, want 0", doc, got)
		}
	}
	json := []byte("{\n  \"spec\": {\n    \"domian\": {}\n  }\n}\n")
	if got := fieldLine(json, "spec.domian"); got != 3 {
		t.Errorf("JSON: spec.domian on line %d, want 3", got)
	}
}

// FuzzFieldLine: any document and path give a line of the document, or 0,
// without panicking.
func FuzzFieldLine(f *testing.F) {
	f.Add([]byte(located), "spec.template.spec.domain.devices.disks[0].disk.bus")
	f.Add([]byte("a: &x [*x]\n"), "a[0][0][0]")
	f.Add([]byte("a: {b: [c, {d: e}]}"), "a.b[1].d")
	f.Fuzz(func(t *testing.T, doc []byte, path string) {
		if len(doc) > 64<<10 {
			return
		}
		line := fieldLine(doc, path)
		if line < 0 || line > bytes.Count(doc, []byte("\n"))+1 {
			t.Fatalf("line %d of a document of %d lines", line, bytes.Count(doc, []byte("\n"))+1)
		}
	})
}
