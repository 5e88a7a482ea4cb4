package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestDiff: two domains are compared by meaning — a VMI and the domain
// XML it converts to are equal, however the XML is spelt; a difference is
// printed field by field and exits 1.
func TestDiff(t *testing.T) {
	vmi := filepath.Join(golden, "basic-minimal", "vmi.yaml")
	xmlFile := filepath.Join(golden, "basic-minimal", "domain.xml")
	xml := sample(t, xmlFile)
	dir := t.TempDir()

	expect(t, exitOK, "", "diff", xmlFile, vmi)
	expect(t, exitOK, "", "diff", vmi, vmi)
	respelt := writeFile(t, dir, "respelt.xml", strings.ReplaceAll(strings.ReplaceAll(xml, "  ", "\t"), "<acpi></acpi>", "<acpi/>"))
	expect(t, exitOK, xml, "diff", "-", respelt)

	changed := writeFile(t, dir, "changed.xml", strings.Replace(xml, `<target dev="vda" bus="virtio">`, `<target dev="sda" bus="sata">`, 1))
	r := expect(t, exitInvalid, "", "diff", changed, vmi)
	out := strings.ReplaceAll(r.stdout, "\u00a0", " ")
	for _, want := range []string{"--- " + changed + "\n+++ " + vmi + "\n", "Target: &libvirtxml.DomainDiskTarget{", `-   Dev: "sda"`, `+   Dev: "vda"`, `-   Bus: "sata"`, `+   Bus: "virtio"`} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("diff lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "error: "+changed+" and "+vmi+" are different domains") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	// The VMI converted with the layout given.
	r = expect(t, exitInvalid, "", "diff", xmlFile, vmi, "--layout", "host")
	if !strings.Contains(r.stdout, "/var/lib/vmi2libvirt/vmis/default_minimal/") {
		t.Errorf("--layout host: the VMI's host paths are not in the diff:\n%s", r.stdout)
	}

	// Inputs that are not domains.
	r = expect(t, exitInvalid, "", "diff", writeFile(t, dir, "broken.xml", "<domain><name>x</nam></domain>"), vmi)
	if !strings.Contains(r.stderr, "error: "+filepath.Join(dir, "broken.xml")+": not domain XML: ") {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	r = expect(t, exitInvalid, "", "diff", xmlFile, filepath.Join(golden, "basic-error-wrong-kind", "vmi.yaml"))
	if !strings.Contains(r.stderr, `vmi.yaml:4: kind: Unsupported value: "Pod"`) {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	expect(t, exitUsage, "", "diff", xmlFile)
	expect(t, exitUsage, "", "diff", "-", "-")
	expect(t, exitUsage, "", "diff", xmlFile, "nope.yaml")
	expect(t, exitUsage, "", "diff", xmlFile, dir)
	expect(t, exitUsage, "", "diff", xmlFile, writeFile(t, dir, "two.yaml", sample(t, vmi)+"---\n"+sample(t, vmi)))
}
