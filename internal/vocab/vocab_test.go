package vocab

import "testing"

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
