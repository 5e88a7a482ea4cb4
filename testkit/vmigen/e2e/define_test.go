package e2e

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/vmigen"
)

const (
	testURI = "qemu:///system"
	// testNamespace holds the test's VMIs: their domains are named
	// vmigen-e2e_<name>, easy to spot if one is ever left behind.
	testNamespace = "vmigen-e2e"
)

// defineCount is how many generated domains TestDefine defines (100 with
// -short).
func defineCount() int {
	if testing.Short() {
		return 100
	}
	return 300
}

// TestDefine converts generated VMIs of the Supported profile for the host
// layout (domain type qemu) and defines each domain on qemu:///system with
// the VALIDATE flag (libvirt's schema and its own checks), then undefines
// it: every one must define. Names carry the test's process id, and every
// domain defined is undefined when the test ends, whatever happens.
//
//	go test ./testkit/vmigen/e2e -run TestDefine -v
func TestDefine(t *testing.T) {
	hosttest.Libvirt(t, testURI)
	hosttest.LockLibvirt(t, false)
	conn, err := libvirt.NewConnect(testURI)
	if err != nil {
		hosttest.Missing(t, "libvirtd unreachable at %s: %v", testURI, err)
	}
	t.Cleanup(func() { _, _ = conn.Close() })
	cfg := vmigen.Config{
		Seed:       11,
		Layout:     vmigen.HostLayout,
		NamePrefix: fmt.Sprintf("vmigen-e2e-%d", os.Getpid()),
		Namespace:  testNamespace,
	}
	n := defineCount()
	start := time.Now()
	defined := 0
	for i := range n {
		c := vmigen.Generate(cfg, i)
		vmi := c.VMI
		api.Default(vmi, api.ClusterConfig{})
		if errs := api.Validate(vmi); len(errs) > 0 {
			t.Errorf("%s: api.Validate: %v", vmi.Name, errs)
			continue
		}
		d, err := convert.Convert(vmi, c.Options)
		if err != nil {
			t.Errorf("%s: convert: %v", vmi.Name, err)
			continue
		}
		if d.Type != "qemu" {
			t.Fatalf("%s: domain type %q: the test defines emulated domains only", vmi.Name, d.Type)
		}
		xml, err := domain.Marshal(d)
		if err != nil {
			t.Fatalf("%s: %v", vmi.Name, err)
		}
		if err := defineAndUndefine(t, conn, d.Name, string(xml)); err != nil {
			doc, _ := vmigen.YAML(c.VMI)
			t.Errorf("%s: %v\nVMI:\n%s\ndomain:\n%s", vmi.Name, err, doc, xml)
			continue
		}
		defined++
	}
	t.Logf("%d of %d generated domains defined and undefined in %.1fs", defined, n, time.Since(start).Seconds())
}

// defineAndUndefine defines a domain with the VALIDATE flag and undefines
// it at once; a cleanup undefines it too should the undefine fail.
func defineAndUndefine(t *testing.T, conn *libvirt.Connect, name, xml string) error {
	dom, err := conn.DomainDefineXMLFlags(xml, libvirt.DOMAIN_DEFINE_VALIDATE)
	if err != nil {
		return fmt.Errorf("define: %w", err)
	}
	defer dom.Free()
	if err := undefine(dom); err != nil {
		t.Cleanup(func() {
			if d, err := conn.LookupDomainByName(name); err == nil {
				_ = undefine(d)
				d.Free()
			}
		})
		return fmt.Errorf("undefine: %w", err)
	}
	return nil
}

// undefine undefines a domain with what defining may have made for it:
// NVRAM, a TPM's state.
func undefine(dom *libvirt.Domain) error {
	err := dom.UndefineFlags(libvirt.DOMAIN_UNDEFINE_NVRAM | libvirt.DOMAIN_UNDEFINE_TPM)
	var lerr libvirt.Error
	if errors.As(err, &lerr) && lerr.Code == libvirt.ERR_NO_DOMAIN {
		return nil
	}
	return err
}
