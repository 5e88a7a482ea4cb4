package launcher_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
)

// refusedByDebianLibvirt are the golden domains Debian 12's libvirt 9.0
// refuses to define, with a fragment of its error: the host layout's passt
// backend and the pvpanic panic model (libvirt 9.1) are newer than that
// libvirt (README, Limits; hostcaps finds both lacking on such a host), and
// an AMD SEV guest needs a host with SEV, which this machine is not
// (hostcaps lists no "sev" of it: the converter refuses such a VMI here).
var refusedByDebianLibvirt = map[string]string{
	"net-host-passt":                "element 'backend'",
	"devices-pvpanic":               "unknown panic model 'pvpanic'",
	"compute-launchsecurity-sev":    "SEV launch security is not supported with this QEMU binary",
	"compute-launchsecurity-sev-es": "SEV launch security is not supported with this QEMU binary",
}

// TestE2EGoldenDomainsDefine defines every golden domain of
// convert/testdata on the real libvirtd, which checks far more than the
// schema (PCI address conflicts, devices the machine cannot have, values
// its parser does not know), and undefines it again. As the launcher does
// on libvirt 9.0, which refuses <maxMemory slots="0">, the domains are
// defined without <maxMemory>; they run under emulation (type qemu), with
// a name and UUID of their own.
func TestE2EGoldenDomainsDefine(t *testing.T) {
	conn, err := libvirt.NewConnect(testURI)
	if err != nil {
		hosttest.Missing(t, "libvirtd unreachable at %s: %v", testURI, err)
	}
	defer conn.Close()
	hosttest.LockLibvirt(t, false)
	// libvirt refuses a TPM 2.0 domain without swtpm and swtpm_setup
	// ("TPM version '2.0' is not supported"); OVMF backs the EFI ones.
	hosttest.Tools(t, "swtpm", "swtpm_setup")
	hosttest.Files(t, hosttest.OVMFCode)
	files, err := filepath.Glob("../convert/testdata/*/domain.xml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 50 {
		t.Fatalf("%d golden domains found, want the whole of convert/testdata", len(files))
	}
	defined := 0
	for _, file := range files {
		name := filepath.Base(filepath.Dir(file))
		raw, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		d, err := domain.Unmarshal(raw)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		d.Type = "qemu"
		d.Name = uniqueName("e2e-golden-" + name)
		d.UUID = ""
		d.MaximumMemory = nil
		xml, err := domain.Marshal(d)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		dom, err := conn.DomainDefineXML(string(xml))
		want, refused := refusedByDebianLibvirt[name]
		switch {
		case err == nil && refused:
			t.Errorf("%s: libvirt now defines it; take it out of refusedByDebianLibvirt (and the README's Limits)", name)
		case err != nil && !refused:
			t.Errorf("%s: libvirt refuses the domain: %v", name, err)
		case err != nil && !strings.Contains(err.Error(), want):
			t.Errorf("%s: refused for another reason than %q: %v", name, want, err)
		}
		if err != nil {
			continue
		}
		defined++
		if err := dom.UndefineFlags(libvirt.DOMAIN_UNDEFINE_NVRAM); err != nil {
			t.Errorf("%s: undefine: %v", name, err)
		}
		dom.Free()
	}
	t.Logf("%d of %d golden domains defined", defined, len(files))
}
