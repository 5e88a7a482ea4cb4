package hostcaps

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// descriptor is the part of QEMU's firmware descriptor schema
// (docs/interop/firmware.json) that Facts reads.
type descriptor struct {
	Description    string   `json:"description"`
	InterfaceTypes []string `json:"interface-types"`
	Mapping        struct {
		Device     string `json:"device"`
		Executable struct {
			Filename string `json:"filename"`
		} `json:"executable"`
		NVRAMTemplate struct {
			Filename string `json:"filename"`
		} `json:"nvram-template"`
		Filename string `json:"filename"` // memory-mapped firmware
	} `json:"mapping"`
	Targets []struct {
		Architecture string   `json:"architecture"`
		Machines     []string `json:"machines"`
	} `json:"targets"`
	Features []string `json:"features"`
}

// firmware reads the descriptors that target arch, in their order.
func firmware(descs []Descriptor, arch string) ([]convert.Firmware, error) {
	out := []convert.Firmware{}
	for _, d := range descs {
		var desc descriptor
		if err := json.Unmarshal(d.JSON, &desc); err != nil {
			return nil, fmt.Errorf("firmware descriptor %s: %w", d.Name, err)
		}
		fw := convert.Firmware{
			Description:  desc.Description,
			Interfaces:   desc.InterfaceTypes,
			Code:         desc.Mapping.Executable.Filename,
			Vars:         desc.Mapping.NVRAMTemplate.Filename,
			SecureBoot:   slices.Contains(desc.Features, "secure-boot"),
			EnrolledKeys: slices.Contains(desc.Features, "enrolled-keys"),
			RequiresSMM:  slices.Contains(desc.Features, "requires-smm"),
			AMDSEV:       slices.Contains(desc.Features, "amd-sev"),
		}
		if fw.Code == "" {
			fw.Code = desc.Mapping.Filename
		}
		found := false
		for _, t := range desc.Targets {
			if t.Architecture == arch {
				found = true
				fw.Machines = append(fw.Machines, t.Machines...)
			}
		}
		if found {
			out = append(out, fw)
		}
	}
	return out, nil
}
