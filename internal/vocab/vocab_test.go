package vocab

import (
	"testing"

	v1 "kubevirt.io/api/core/v1"
)

// TestNoDuplicateWords: a word is in a vocabulary once, so that an error's
// list of supported values names each once.
func TestNoDuplicateWords(t *testing.T) {
	for name, w := range map[string]Words{
		"DiskBuses": DiskBuses.Words(), "LUNBuses": LUNBuses, "CacheModes": CacheModes,
		"IOModes": IOModes, "ErrorPolicies": ErrorPolicies, "TrayStates": TrayStates,
		"HostDiskTypes": HostDiskTypes, "IOThreadsPolicies": IOThreadsPolicies,
		"InputBuses": InputBuses, "InputTypes": InputTypes, "VideoTypes": VideoTypes,
		"SoundModels": SoundModels, "PanicModels": PanicModels, "WatchdogActions": WatchdogActions,
		"InterfaceModels": InterfaceModels, "InterfaceStates": InterfaceStates,
		"PortProtocols": PortProtocols, "CPUFeaturePolicies": CPUFeaturePolicies,
		"RebootPolicies": RebootPolicies.Words(), "EvictionStrategies": EvictionStrategies,
		"MachineTypes": MachineTypes,
	} {
		seen := map[string]bool{}
		for _, x := range w {
			if x == "" || seen[x] {
				t.Errorf("%s: %q is empty or listed twice", name, x)
			}
			seen[x] = true
		}
	}
}

// TestMapping: Lookup finds what a word becomes, and only for its words.
func TestMapping(t *testing.T) {
	if p, ok := DiskBuses.Lookup("virtio"); !ok || p != "vd" {
		t.Errorf("virtio: %q %t, want vd", p, ok)
	}
	if p, ok := DiskBuses.Lookup("sata"); !ok || p != "sd" {
		t.Errorf("sata: %q %t, want sd", p, ok)
	}
	if _, ok := DiskBuses.Lookup("ide"); ok {
		t.Error("ide is not a bus of the vocabulary")
	}
	if a, ok := RebootPolicies.Lookup("Terminate"); !ok || a != "destroy" {
		t.Errorf("Terminate: %q %t, want destroy", a, ok)
	}
	if !VideoTypes.Has("bochs") || VideoTypes.Has("qxl") {
		t.Error("bochs is a video type of KubeVirt's on amd64, qxl is not")
	}
}

// TestDiskDevice: the first kind set wins, and a CD-ROM is read-only unless
// it says otherwise.
func TestDiskDevice(t *testing.T) {
	no := false
	for _, tc := range []struct {
		disk     v1.Disk
		kind     string
		bus      v1.DiskBus
		readOnly bool
	}{
		{v1.Disk{DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio, ReadOnly: true}}}, DiskKindDisk, v1.DiskBusVirtio, true},
		{v1.Disk{DiskDevice: v1.DiskDevice{LUN: &v1.LunTarget{Bus: v1.DiskBusSCSI}}}, DiskKindLUN, v1.DiskBusSCSI, false},
		{v1.Disk{DiskDevice: v1.DiskDevice{CDRom: &v1.CDRomTarget{Bus: v1.DiskBusSATA}}}, DiskKindCDROM, v1.DiskBusSATA, true},
		{v1.Disk{DiskDevice: v1.DiskDevice{CDRom: &v1.CDRomTarget{Bus: v1.DiskBusSATA, ReadOnly: &no}}}, DiskKindCDROM, v1.DiskBusSATA, false},
		{v1.Disk{DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusSATA}, CDRom: &v1.CDRomTarget{}}}, DiskKindDisk, v1.DiskBusSATA, false},
		{v1.Disk{}, "", "", false},
	} {
		kind, bus, readOnly := DiskDevice(&tc.disk)
		if kind != tc.kind || bus != tc.bus || readOnly != tc.readOnly {
			t.Errorf("%+v: got %q %q %t, want %q %q %t", tc.disk.DiskDevice, kind, bus, readOnly, tc.kind, tc.bus, tc.readOnly)
		}
	}
}
