package api

import (
	"strings"
	"testing"
)

// TestVMFirmwareUUID checks that a VirtualMachine's VMI gets the firmware
// UUID KubeVirt's VM controller gives it. The expected UUIDs were produced by
// KubeVirt's own code at commit d923fdb815 (VM controller, admission defaults
// and converter) for VMs of these names.
func TestVMFirmwareUUID(t *testing.T) {
	for name, want := range map[string]string{
		"vm-cirros":    "0d2a2043-41c0-59c3-9b17-025022203668",
		"fedora-multi": "e163147b-b737-5c52-890d-3fa9da3a9db0",
		"win":          "bb56c04c-25ef-50a6-addd-3d792f86bc85",
	} {
		doc := "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: " + name +
			"\n  namespace: other\nspec:\n  runStrategy: Always\n  template:\n    spec:\n      domain:\n        firmware: {serial: s1}\n        devices: {}\n"
		vmi, err := Decode([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if got := string(vmi.Spec.Domain.Firmware.UUID); got != want {
			t.Errorf("VM %s: firmware uuid %s, want %s", name, got, want)
		}
		if vmi.Spec.Domain.Firmware.Serial != "s1" {
			t.Errorf("VM %s: firmware serial lost", name)
		}
	}

	// A template's own UUID is kept, and a bare VMI still gets Default's.
	vmi, err := Decode([]byte("apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: a}\nspec:\n  runStrategy: Always\n  template:\n    spec:\n      domain:\n        firmware: {uuid: 5d307ca9-b3ef-428c-8861-06e72d69f223}\n        devices: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(vmi.Spec.Domain.Firmware.UUID); got != "5d307ca9-b3ef-428c-8861-06e72d69f223" {
		t.Errorf("template uuid replaced by %s", got)
	}
	vmi, err = Decode([]byte("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata: {name: a}\nspec:\n  domain:\n    devices: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if vmi.Spec.Domain.Firmware != nil {
		t.Errorf("a bare VMI got a firmware from Decode: %+v", vmi.Spec.Domain.Firmware)
	}
}

// TestVMAutoattachInput checks that a VirtualMachine's template with
// autoattachInputDevice and no input gets KubeVirt's VM controller input
// "default-0", and that a bare VMI or a template with inputs does not
// (checked against KubeVirt's code at d923fdb815).
func TestVMAutoattachInput(t *testing.T) {
	const vm = "apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata: {name: a}\nspec:\n  runStrategy: Always\n  template:\n    spec:\n      domain:\n        devices:\n          autoattachInputDevice: true\n"
	const vmi = "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata: {name: a}\nspec:\n  domain:\n    devices:\n      autoattachInputDevice: true\n"
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"vm", vm, []string{VMDefaultInputName}},
		{"vm with input", vm + "          inputs: [{name: mine, type: tablet, bus: virtio}]\n", []string{"mine"}},
		{"bare vmi", vmi, nil},
	} {
		got, err := Decode([]byte(tc.doc))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var names []string
		for _, in := range got.Spec.Domain.Devices.Inputs {
			names = append(names, in.Name)
		}
		if strings.Join(names, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: inputs %v, want %v", tc.name, names, tc.want)
		}
	}
}
