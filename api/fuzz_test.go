package api

import (
	"strings"

	"encoding/json"
	"errors"
	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	v1 "kubevirt.io/api/core/v1"
	"testing"
)

// FuzzDecode checks that Decode never panics, that what it refuses is a
// decode-stage *InvalidError, and that what it accepts survives a round trip: marshal
// to JSON, decode again, same VMI. Default and Validate must not panic on
// anything Decode accepts either. (Run it with -fuzzminimizetime of a few
// seconds: minimizing large YAML inputs otherwise stalls for a minute.)
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"vmi-small.yaml", "vm-server.yaml", "vmi-windows.yaml"} {
		f.Add(readTestdata(f, name))
	}
	f.Add([]byte(""))
	f.Add([]byte("---\n"))
	f.Add([]byte(`{"apiVersion":"kubevirt.io/v1","kind":"VirtualMachineInstance","metadata":{"name":"j"},"spec":{"domain":{"devices":{}}}}`))
	f.Add([]byte("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nspec:\n  domain:\n    resources:\n      requests:\n        memory: 1.5.5Gi\n"))
	f.Add([]byte("apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: v}\nspec:\n  template:\n    spec:\n      domain: {cpu: {cores: 2}}\n"))
	f.Add([]byte("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nspec:\n  domain:\n    cpu: {sockets: 4294967295, cores: 4294967295}\n    memory: {guest: 9223372036854775807}\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		vmi, err := Decode(data)
		if err != nil {
			var de *InvalidError
			if !errors.As(err, &de) || de.Stage != StageDecode {
				t.Fatalf("error %T is not an *InvalidError: %v", err, err)
			}
			if err.Error() == "" {
				t.Fatal("empty error message")
			}
			return
		}
		js, err := json.Marshal(vmi)
		if err != nil {
			t.Fatalf("marshal: %v", err)
		}
		again, err := Decode(js)
		if err != nil {
			t.Fatalf("decoding our own JSON: %v\n%s", err, js)
		}
		js2, err := json.Marshal(again)
		if err != nil {
			t.Fatalf("marshal again: %v", err)
		}
		if string(js) != string(js2) {
			t.Fatalf("round trip changed the VMI:\n%s\n%s", js, js2)
		}
		if !equality.Semantic.DeepEqual(vmi.Spec, again.Spec) {
			t.Fatalf("round trip changed the spec:\n%s", js)
		}
		_ = Validate(vmi) // also without defaults: no panic
		d := vmi.DeepCopy()
		Default(d, ClusterConfig{})
		_ = Validate(d)
	})
}

// FuzzDefaultValidate builds VMIs from fuzzed values in the fields where
// absurd input hides (topology, quantities, buses, addresses, names) and
// checks that Default and Validate never panic, that Default is
// idempotent and that Validate gives the same answer twice.
func FuzzDefaultValidate(f *testing.F) {
	f.Add(uint32(1), uint32(2), uint32(1), "2Gi", "500m", "virtio", "02:00:00:00:00:01", "0000:00:05.0", "web", "2Mi")
	f.Add(uint32(0), uint32(0), uint32(0), "-1", "1e6", "ide", "zz", "0000:00:05.8", "../x", "0")
	f.Add(uint32(4294967295), uint32(4294967295), uint32(2), "9223372036854775807", "4294967296", "sata", "", "", "A", "1Gi")
	f.Add(uint32(3), uint32(200), uint32(1), "1.5", "0.001", "usb", "02-00-00-00-00-01", "ffff:ff:1f.7", strings.Repeat("a", 300), "3Mi")
	f.Fuzz(func(t *testing.T, sockets, cores, threads uint32, mem, cpu, bus, mac, pci, name, page string) {
		vmi := &v1.VirtualMachineInstance{}
		vmi.Name = name
		d := &vmi.Spec.Domain
		d.CPU = &v1.CPU{Sockets: sockets, Cores: cores, Threads: threads}
		if q, err := resource.ParseQuantity(mem); err == nil {
			d.Resources.Requests = k8sv1.ResourceList{k8sv1.ResourceMemory: q}
			d.Resources.Limits = k8sv1.ResourceList{k8sv1.ResourceMemory: q}
		}
		if q, err := resource.ParseQuantity(cpu); err == nil {
			if d.Resources.Limits == nil {
				d.Resources.Limits = k8sv1.ResourceList{}
			}
			d.Resources.Limits[k8sv1.ResourceCPU] = q
		}
		if page != "" {
			d.Memory = &v1.Memory{Hugepages: &v1.Hugepages{PageSize: page}}
		}
		d.Devices.Disks = []v1.Disk{{Name: name, DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBus(bus), PciAddress: pci}}}}
		d.Devices.Interfaces = []v1.Interface{{Name: name, MacAddress: mac, PciAddress: pci, InterfaceBindingMethod: v1.InterfaceBindingMethod{Masquerade: &v1.InterfaceMasquerade{}}}}
		vmi.Spec.Networks = []v1.Network{{Name: name, NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}}
		vmi.Spec.Volumes = []v1.Volume{{Name: name, VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: name, Path: pci}}}}

		_ = Validate(vmi)
		Default(vmi, ClusterConfig{})
		again := vmi.DeepCopy()
		Default(again, ClusterConfig{})
		if !equality.Semantic.DeepEqual(vmi, again) {
			t.Fatal("Default is not idempotent")
		}
		a, b := Validate(vmi), Validate(again)
		if a.ToAggregate() != nil && b.ToAggregate() != nil && a.ToAggregate().Error() != b.ToAggregate().Error() {
			t.Fatalf("Validate differs:\n%v\n%v", a, b)
		}
		if len(a) != len(b) {
			t.Fatalf("Validate differs:\n%v\n%v", a, b)
		}
	})
}
