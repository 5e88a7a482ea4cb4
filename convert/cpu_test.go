package convert

import (
	"errors"
	"strings"
	"testing"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/api"
)

// computeVMI returns a VMI with 1Gi of guest memory and the given CPU.
func computeVMI(cpu *v1.CPU) *v1.VirtualMachineInstance {
	guest := resource.MustParse("1Gi")
	return &v1.VirtualMachineInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "default", UID: "uid"},
		Spec: v1.VirtualMachineInstanceSpec{Domain: v1.DomainSpec{
			CPU:    cpu,
			Memory: &v1.Memory{Guest: &guest},
		}},
	}
}

// newConverter starts a converter as Convert does.
func newConverter(vmi *v1.VirtualMachineInstance, opts Options) *converter {
	c := new(converter)
	c.start(vmi, opts)
	return c
}

// runArea runs the given areas of a converter over vmi with
// KubeVirtOptions changed by edit.
func runArea(t *testing.T, vmi *v1.VirtualMachineInstance, edit func(*Options), areas ...func(*converter, *libvirtxml.Domain) error) (*libvirtxml.Domain, *converter, error) {
	t.Helper()
	opts := KubeVirtOptions()
	if edit != nil {
		edit(&opts)
	}
	c := newConverter(vmi, opts)
	d := &libvirtxml.Domain{}
	for _, a := range areas {
		if err := a(c, d); err != nil {
			return d, c, err
		}
	}
	return d, c, nil
}

// refusedByAPI asserts that api.Validate refuses vmi with an error on path
// whose message holds want: a rule of the VMI alone is api's, and the
// converter does not check it again.
func refusedByAPI(t *testing.T, vmi *v1.VirtualMachineInstance, path, want string) {
	t.Helper()
	var got []string
	for _, fe := range api.Validate(vmi) {
		if fe.Field == path && strings.Contains(fe.Error(), want) {
			return
		}
		got = append(got, fe.Error())
	}
	t.Errorf("api.Validate gives no error on %s containing %q; it gives %q", path, want, got)
}

// fieldErr asserts that err is a *field.Error on path whose message holds want.
func fieldErr(t *testing.T, err error, path, want string) {
	t.Helper()
	var fe *field.Error
	if !errors.As(err, &fe) {
		t.Fatalf("want a *field.Error on %s, got %v", path, err)
	}
	if fe.Field != path || !strings.Contains(fe.Error(), want) {
		t.Errorf("got %q, want an error on %s containing %q", fe.Error(), path, want)
	}
}

// The hotplug layout follows KubeVirt's CPUDomainConfigurator: all
// maxSockets×cores×threads vCPUs are declared, the booted ones enabled, the
// first socket's not hotpluggable (checked by hand against compute/cpu.go).
func TestCPUHotplugVCPUs(t *testing.T) {
	vmi := computeVMI(&v1.CPU{Sockets: 2, Cores: 2, Threads: 1, MaxSockets: 3})
	d, _, err := runArea(t, vmi, nil, (*converter).cpu)
	if err != nil {
		t.Fatal(err)
	}
	if d.VCPU.Value != 6 || d.VCPU.Placement != "static" {
		t.Errorf("vcpu = %+v, want 6 static", d.VCPU)
	}
	if tp := d.CPU.Topology; tp.Sockets != 3 || tp.Cores != 2 || tp.Threads != 1 {
		t.Errorf("topology = %+v, want 3/2/1", tp)
	}
	var got []string
	for _, v := range d.VCPUs.VCPU {
		got = append(got, v.Enabled+"/"+v.Hotpluggable)
	}
	want := "yes/no yes/no yes/yes yes/yes no/yes no/yes"
	if strings.Join(got, " ") != want {
		t.Errorf("vcpus = %v, want %s", got, want)
	}
}

// Without a topology, KubeVirt's GetCPUTopology takes sockets from the CPU
// limit, else the request.
func TestCPUTopologyFromResources(t *testing.T) {
	vmi := computeVMI(nil)
	vmi.Spec.Domain.Resources.Requests = k8sv1.ResourceList{k8sv1.ResourceCPU: resource.MustParse("2")}
	vmi.Spec.Domain.Resources.Limits = k8sv1.ResourceList{k8sv1.ResourceCPU: resource.MustParse("3")}
	d, _, err := runArea(t, vmi, nil, (*converter).cpu)
	if err != nil {
		t.Fatal(err)
	}
	if d.VCPU.Value != 3 || d.CPU.Topology.Sockets != 3 || d.CPU.Mode != "host-model" || d.VCPUs != nil {
		t.Errorf("got vcpu %d, topology %+v, mode %s, vcpus %v; want 3 sockets of host-model, no hotplug", d.VCPU.Value, d.CPU.Topology, d.CPU.Mode, d.VCPUs)
	}
}

// Custom models get mpx disabled unless the VMI names mpx (KubeVirt's
// RequiresMPXCPUValidation on amd64); features keep their policy, an empty
// one reads as require.
func TestCPUModelFeatures(t *testing.T) {
	vmi := computeVMI(&v1.CPU{Model: "Skylake-Server", Features: []v1.CPUFeature{{Name: "pcid"}, {Name: "vmx", Policy: "forbid"}}})
	d, _, err := runArea(t, vmi, nil, (*converter).cpu)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range d.CPU.Features {
		got = append(got, f.Name+"="+f.Policy)
	}
	if d.CPU.Mode != "custom" || d.CPU.Model.Value != "Skylake-Server" || strings.Join(got, ",") != "pcid=require,vmx=forbid,mpx=disable" {
		t.Errorf("got mode %s model %+v features %v", d.CPU.Mode, d.CPU.Model, got)
	}
	vmi = computeVMI(&v1.CPU{Model: "host-passthrough", Features: []v1.CPUFeature{{Name: "mpx", Policy: "require"}}})
	d, _, _ = runArea(t, vmi, nil, (*converter).cpu)
	if d.CPU.Mode != "host-passthrough" || d.CPU.Model != nil || len(d.CPU.Features) != 1 {
		t.Errorf("host-passthrough: got %+v", d.CPU)
	}
}

// Pinning as in the reference vmi-fedora-isolated: one booted vCPU on the
// first host CPU, the emulator thread on the next; with the even-parity
// annotation and an even vCPU count the emulator gets two.
func TestCPUPinning(t *testing.T) {
	vmi := computeVMI(&v1.CPU{Sockets: 1, Cores: 1, Threads: 1, MaxSockets: 4, DedicatedCPUPlacement: true, IsolateEmulatorThread: true})
	d, _, err := runArea(t, vmi, nil, (*converter).cpu)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.CPUTune.VCPUPin) != 1 || d.CPUTune.VCPUPin[0].CPUSet != "2" || d.CPUTune.EmulatorPin.CPUSet != "3" {
		t.Errorf("cputune = %+v", d.CPUTune)
	}

	vmi = computeVMI(&v1.CPU{Cores: 2, DedicatedCPUPlacement: true, IsolateEmulatorThread: true})
	vmi.Annotations = map[string]string{v1.EmulatorThreadCompleteToEvenParity: ""}
	d, _, err = runArea(t, vmi, nil, (*converter).cpu)
	if err != nil {
		t.Fatal(err)
	}
	if d.CPUTune.EmulatorPin.CPUSet != "4,5" || d.CPUTune.VCPUPin[1].CPUSet != "3" {
		t.Errorf("even parity: cputune = %+v", d.CPUTune)
	}

	vmi = computeVMI(&v1.CPU{Cores: 4, DedicatedCPUPlacement: true, IsolateEmulatorThread: true})
	_, _, err = runArea(t, vmi, nil, (*converter).cpu)
	fieldErr(t, err, "spec.domain.cpu.dedicatedCpuPlacement", "needs 5 dedicated host CPUs (4 vCPUs, 1 for the emulator thread), but Options.CPUSet has 4")
}

// IO thread pinning follows KubeVirt's FormatDomainIOThreadPin
// (ioThreadPins, over the host CPUs the pins fact chose).
func TestPinIOThreads(t *testing.T) {
	cases := []struct {
		name    string
		cpu     v1.CPU
		threads uint
		want    string
	}{
		{"isolated emulator", v1.CPU{Cores: 2, DedicatedCPUPlacement: true, IsolateEmulatorThread: true}, 1, "1:4"},
		{"more threads than vCPUs", v1.CPU{Cores: 2, DedicatedCPUPlacement: true}, 3, "1:3 2:2 3:3"},
		{"balanced", v1.CPU{Cores: 4, DedicatedCPUPlacement: true}, 3, "1:2,3 2:4 3:5"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vmi := computeVMI(&tc.cpu)
			_, c, err := runArea(t, vmi, nil, (*converter).cpu)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range ioThreadPins(&c.facts.pins, tc.threads, nil) {
				got = append(got, strings.Join([]string{uintString(p.IOThread), p.CPUSet}, ":"))
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("iothreadpin = %v, want %s", got, tc.want)
			}
		})
	}
}

func uintString(u uint) string { return cpuList([]uint{u}) }

// The IO threads of a VMI with dedicated CPUs are pinned by the iothreads
// area, whichever of cpu and iothreads runs first: each writes its own pins
// into the one <cputune>.
func TestIOThreadPinsWithCPUPins(t *testing.T) {
	vmi := computeVMI(&v1.CPU{Cores: 2, DedicatedCPUPlacement: true, IsolateEmulatorThread: true})
	vmi.Spec.Domain.Devices.Disks = []v1.Disk{diskNamed("a", v1.DiskBusVirtio, true)}
	for _, order := range [][]func(*converter, *libvirtxml.Domain) error{
		{(*converter).cpu, (*converter).iothreads},
		{(*converter).iothreads, (*converter).cpu},
	} {
		d, _, err := runArea(t, vmi, nil, order...)
		if err != nil {
			t.Fatal(err)
		}
		tune := d.CPUTune
		if d.IOThreads != 1 || len(tune.VCPUPin) != 2 || tune.EmulatorPin == nil || tune.EmulatorPin.CPUSet != "4" ||
			len(tune.IOThreadPin) != 1 || tune.IOThreadPin[0].IOThread != 1 || tune.IOThreadPin[0].CPUSet != "4" {
			t.Errorf("iothreads %d, cputune %+v", d.IOThreads, tune)
		}
	}
}

func TestCPURefusals(t *testing.T) {
	vmi := computeVMI(&v1.CPU{Cores: 1, DedicatedCPUPlacement: true, NUMA: &v1.NUMA{GuestMappingPassthrough: &v1.NUMAGuestMappingPassthrough{}}})
	_, _, err := runArea(t, vmi, nil, (*converter).cpu)
	fieldErr(t, err, "spec.domain.cpu.numa.guestMappingPassthrough", "host's NUMA topology")

	// The rules of the VMI alone are api.Validate's, not checked again.
	vmi = computeVMI(&v1.CPU{Cores: 1, IsolateEmulatorThread: true})
	refusedByAPI(t, vmi, "spec.domain.cpu.isolateEmulatorThread", "dedicatedCpuPlacement")

	vmi = computeVMI(&v1.CPU{Sockets: 2, MaxSockets: 1})
	refusedByAPI(t, vmi, "spec.domain.cpu.sockets", "must not be greater than spec.domain.cpu.maxSockets (1)")
	if d, _, err := runArea(t, vmi, nil, (*converter).cpu); err != nil || d.VCPUs != nil || d.VCPU.Value != 2 {
		t.Errorf("without validation: vcpu %+v, vcpus %+v, %v; want 2 vCPUs and no hotplug", d.VCPU, d.VCPUs, err)
	}
}
