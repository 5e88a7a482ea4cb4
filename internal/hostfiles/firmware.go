package hostfiles

import (
	"os"
	"slices"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// firmwareSets are the OVMF file sets the launcher looks for, in order:
// Debian and Ubuntu (4M and 2M flash) and Fedora, RHEL and KubeVirt images.
var firmwareSets = []convert.EFIFirmware{
	{
		Code:           "/usr/share/OVMF/OVMF_CODE_4M.fd",
		Vars:           "/usr/share/OVMF/OVMF_VARS_4M.fd",
		SecureBootCode: "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd",
		SecureBootVars: "/usr/share/OVMF/OVMF_VARS_4M.ms.fd",
	},
	{
		Code:           "/usr/share/OVMF/OVMF_CODE.fd",
		Vars:           "/usr/share/OVMF/OVMF_VARS.fd",
		SecureBootCode: "/usr/share/OVMF/OVMF_CODE.secboot.fd",
		SecureBootVars: "/usr/share/OVMF/OVMF_VARS.ms.fd",
	},
	{
		Code:           "/usr/share/edk2/ovmf/OVMF_CODE.fd",
		Vars:           "/usr/share/edk2/ovmf/OVMF_VARS.fd",
		SecureBootCode: "/usr/share/edk2/ovmf/OVMF_CODE.secboot.fd",
		SecureBootVars: "/usr/share/edk2/ovmf/OVMF_VARS.secboot.fd",
	},
}

// FindEFI returns the first set of firmwareSets whose code file libvirt
// lists among its loaders (domcapabilities) or that exists on the host;
// the zero value when there is none.
func FindEFI(loaders []string) convert.EFIFirmware {
	for _, set := range firmwareSets {
		if slices.Contains(loaders, set.Code) {
			return set
		}
		if _, err := os.Stat(set.Code); err == nil {
			return set
		}
	}
	return convert.EFIFirmware{}
}
