package hostcaps_test

import (
	"os"
	"strings"
	"testing"

	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/hostcaps"
)

// HostModelCPU gives the host-model CPU of the domain capabilities as the
// <cpu> libvirt expands (its model, vendor and every feature with its
// policy), and nothing where libvirt offers no host-model CPU.
func TestHostModelCPU(t *testing.T) {
	dc, err := os.ReadFile("testdata/debian12-emulated/domcapabilities.xml")
	if err != nil {
		t.Fatal(err)
	}
	got, ok, err := hostcaps.HostModelCPU(dc)
	if err != nil || !ok {
		t.Fatalf("ok %v, err %v", ok, err)
	}
	cpu := &libvirtxml.DomainCPU{}
	if err := cpu.Unmarshal(got); err != nil {
		t.Fatalf("%v:\n%s", err, got)
	}
	if cpu.Mode != "custom" || cpu.Model == nil || cpu.Model.Value != "EPYC" || cpu.Vendor != "AMD" {
		t.Errorf("got %s", got)
	}
	// The captured host-model CPU requires 18 features and disables 10.
	policies := map[string]int{}
	for _, f := range cpu.Features {
		policies[f.Policy]++
	}
	if policies["require"] != 18 || policies["disable"] != 10 || len(policies) != 2 {
		t.Errorf("feature policies %v, want 18 require and 10 disable", policies)
	}
	if !strings.Contains(got, `<feature policy="disable" name="vme"></feature>`) {
		t.Errorf("vme is not disabled in:\n%s", got)
	}

	dc, err = os.ReadFile("testdata/libvirt-docs-minimal/domcapabilities.xml")
	if err != nil {
		t.Fatal(err)
	}
	if got, ok, err := hostcaps.HostModelCPU(dc); ok || err != nil || got != "" {
		t.Errorf("no host-model: got %q, %v, %v", got, ok, err)
	}
	if _, _, err := hostcaps.HostModelCPU([]byte("<domainCapabilities")); err == nil {
		t.Error("broken domain capabilities: no error")
	}
}
