package launcher_test

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/hostcaps"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// TestE2EHostFacts reads the real libvirtd's facts (capabilities, domain
// capabilities, firmware descriptors, probe domains) and checks that a VMI
// asking for a CPU model, a machine type or a feature this host lacks is
// refused by Plan at its field paths, with nothing written or defined.
func TestE2EHostFacts(t *testing.T) {
	e := newEnv(t)
	facts, err := e.l.HostFacts(ctxFor(t, time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("facts: libvirt %d, QEMU %d, %s on %s, %d machine types, CPU models %v, lacks %v",
		facts.Libvirt, facts.QEMU, facts.DomainType, facts.Machine, len(facts.MachineTypes), facts.CPUModels, facts.Lacks)
	version, err := e.conn.GetLibVersion()
	if err != nil {
		t.Fatal(err)
	}
	if facts.Libvirt != version || facts.Arch != "x86_64" || facts.DomainType != "qemu" ||
		!slices.Contains(facts.MachineTypes, "q35") || !strings.HasPrefix(facts.Machine, "pc-q35-") || len(facts.CPUModels) == 0 {
		t.Errorf("facts do not describe this libvirt %d under emulation: %+v", version, facts)
	}
	// Debian 12's libvirt 9.0 lacks these forms of KubeVirt's domain (its
	// schema has none of them); a newer one may have them.
	if version < 9001000 {
		for _, l := range []convert.Lack{convert.LackSlotlessMaxMemory, convert.LackDiscardGranularity, convert.LackTLBFlushDirectExtended, convert.LackDiskIOThreads, convert.LackPvpanic} {
			if facts.Has(l) {
				t.Errorf("libvirt %d: the facts do not say it lacks %s", version, l)
			}
		}
	}

	// The expanded host-model CPU: its own features among them, those it
	// disables not.
	if hm := facts.HostModel; hm != nil {
		for _, f := range hm.Features {
			if !slices.Contains(facts.CPUFeatures, f) {
				t.Errorf("host-model requires %s, which CPUFeatures %v lacks", f, facts.CPUFeatures)
			}
		}
		for _, f := range hm.Disabled {
			if slices.Contains(facts.CPUFeatures, f) {
				t.Errorf("host-model disables %s, which CPUFeatures has", f)
			}
		}
		if !slices.Contains(facts.CPUFeatures, "sse2") {
			t.Errorf("CPUFeatures %v lack sse2", facts.CPUFeatures)
		}
	}

	const model, machine = "Skylake-Server-v4", "pc-q35-rhel9.6.0"
	if slices.Contains(facts.CPUModels, model) || slices.Contains(facts.MachineTypes, machine) {
		t.Skipf("this host offers %s or %s", model, machine)
	}
	vmi := guestVMI(t, uniqueName("e2e-hostfacts"), 30, testguest.ActionACPI)
	vmi.Spec.Domain.CPU = &v1.CPU{Model: model}
	vmi.Spec.Domain.Machine = &v1.Machine{Type: machine}
	want := []string{"spec.domain.cpu.model", "spec.domain.machine.type"}
	if !facts.Has(convert.LackTLBFlushDirectExtended) {
		vmi.Spec.Domain.Features = &v1.Features{Hyperv: &v1.FeatureHyperv{VPIndex: &v1.FeatureState{},
			TLBFlush: &v1.TLBFlush{Direct: &v1.FeatureState{}}}}
		want = append(want, "spec.domain.features.hyperv.tlbflush.direct")
	}
	_, err = e.l.Plan(ctxFor(t, time.Minute), vmi)
	var ie *launcher.InvalidError
	if !errors.Is(err, launcher.ErrInvalid) || !errors.As(err, &ie) {
		t.Fatalf("Plan: %v, want a launcher.InvalidError", err)
	}
	var got []string
	for _, fe := range ie.Errors {
		got = append(got, fe.Field)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("refused at %v, want %v: %v", got, want, err)
	}
	if !strings.Contains(err.Error(), `Unsupported value: "`+model+`": this host's QEMU offers`) {
		t.Errorf("the message does not say what the host offers: %v", err)
	}
	if err := e.l.Sync(ctxFor(t, time.Minute), vmi); !errors.Is(err, launcher.ErrInvalid) {
		t.Errorf("Sync: %v, want ErrInvalid", err)
	}
	if _, serr := os.Stat(e.layout.StateFolder(vmi.DeepCopy())); !errors.Is(serr, os.ErrNotExist) {
		t.Errorf("the refused VMI left its state folder (%v)", serr)
	}
	if dom, err := e.conn.LookupDomainByName(domainName(vmi)); err == nil {
		_ = dom.Free()
		t.Error("the refused VMI was defined")
	}

	// EFI guests boot the builds QEMU's firmware descriptors name (secure
	// boot: the one with enrolled keys), when there are descriptors.
	if efi, ok := hostcaps.EFI(facts.Firmware, facts.Machine); ok {
		for _, secure := range []bool{true, false} {
			vmi := guestVMI(t, uniqueName("e2e-hostfacts"), 30, testguest.ActionACPI)
			vmi.Spec.Domain.Firmware = &v1.Firmware{Bootloader: &v1.Bootloader{EFI: &v1.EFI{SecureBoot: &secure}}}
			vmi.Spec.Domain.Features = &v1.Features{SMM: &v1.FeatureState{}}
			want := efi.Code
			if secure {
				want = efi.SecureBootCode
			}
			p, err := e.l.Plan(ctxFor(t, time.Minute), vmi)
			if err != nil || p.Domain.OS.Loader == nil || p.Domain.OS.Loader.Path != want || want == "" {
				t.Errorf("secure boot %v: loader of %v, %v; want %q from the descriptors %+v", secure, p, err, want, facts.Firmware)
			}
		}
	}

	// A required feature the host's CPU lacks (vmx: no nested
	// virtualization under emulation), at its index.
	const feature = "vmx"
	if facts.CPUFeatures == nil || slices.Contains(facts.CPUFeatures, feature) {
		t.Skipf("this host's CPU features %v include %s", facts.CPUFeatures, feature)
	}
	vmi = guestVMI(t, uniqueName("e2e-hostfacts"), 30, testguest.ActionACPI)
	vmi.Spec.Domain.CPU = &v1.CPU{Features: []v1.CPUFeature{{Name: "sse2"}, {Name: feature, Policy: "require"}}}
	_, err = e.l.Plan(ctxFor(t, time.Minute), vmi)
	if !errors.As(err, &ie) || len(ie.Errors) != 1 || ie.Errors[0].Field != "spec.domain.cpu.features[1].name" {
		t.Errorf("Plan of a VMI requiring %s: %v, want one refusal at spec.domain.cpu.features[1].name", feature, err)
	}
}
