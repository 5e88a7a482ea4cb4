package golden

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// TestInvalidDomainFiles checks that the batch check finds exactly the
// files virt-xml-validate FILE domain refuses, one at a time.
func TestInvalidDomainFiles(t *testing.T) {
	if !haveValidator(t) {
		return
	}
	dir := t.TempDir()
	domains := map[string]string{
		"valid.xml":   `<domain type="qemu"><name>a</name><memory unit="MiB">64</memory><os><type arch="x86_64" machine="q35">hvm</type></os></domain>`,
		"clock.xml":   `<domain type="qemu"><name>b</name><memory unit="MiB">64</memory><os><type arch="x86_64" machine="q35">hvm</type></os><clock></clock></domain>`,
		"pvpanic.xml": `<domain type="qemu"><name>c</name><os><type arch="x86_64" machine="q35">hvm</type></os><devices><panic model="pvpanic"/></devices></domain>`,
		"another.xml": `<domain type="kvm"><name>d</name><memory unit="KiB">65536</memory><vcpu>2</vcpu><os><type arch="x86_64">hvm</type></os></domain>`,
	}
	var files, want []string
	for _, name := range slices.Sorted(maps.Keys(domains)) {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(domains[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		if exec.Command(Validator, f, "domain").Run() != nil {
			want = append(want, f)
		}
	}
	if len(want) != 2 {
		t.Fatalf("virt-xml-validate refuses %q; the cases expect clock.xml and pvpanic.xml", want)
	}
	got, _, err := invalidDomainFiles(files)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("invalidDomainFiles: %q, %v; want %q", got, err, want)
	}
}
