package vmigen

import (
	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// Where the host layout's Options put what a VMI names.
const (
	// HostDiskDir is the folder every generated hostDisk path lies under,
	// the one folder of the host layout's HostDiskAllow.
	HostDiskDir = "/var/lib/vmi2libvirt/hostdisks"
	// ClaimDir holds the files the host layout maps claims to.
	ClaimDir = "/var/lib/vmi2libvirt/claims"
	// ClaimVG is the volume group whose logical volumes the host layout
	// maps block claims to.
	ClaimVG = "/dev/vmigen"
)

// hostEFI is Debian 12's OVMF (package ovmf), as the launcher finds it.
var hostEFI = convert.EFIFirmware{
	Code:           "/usr/share/OVMF/OVMF_CODE_4M.fd",
	Vars:           "/usr/share/OVMF/OVMF_VARS_4M.fd",
	SecureBootCode: "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd",
	SecureBootVars: "/usr/share/OVMF/OVMF_VARS_4M.ms.fd",
}

// hostCPUSet is the host layout's CPU set for dedicated CPUs: eight host
// CPUs, sibling threads side by side.
var hostCPUSet = []uint{0, 1, 2, 3, 4, 5, 6, 7}

// dedicatedBudget is how many host CPUs the Case's Options give dedicated
// vCPUs, the emulator thread and a supplemental IO-thread pool together.
func (g *gen) dedicatedBudget() uint {
	if g.host {
		return uint(len(hostCPUSet))
	}
	return uint(len(convert.KubeVirtOptions().CPUSet))
}

// options returns the convert.Options of the VMI for the Config's layout.
func (g *gen) options() convert.Options {
	o := convert.KubeVirtOptions()
	if !g.host {
		return o
	}
	o.DomainType = "qemu"
	o.EFI = hostEFI
	o.CPUSet = append([]uint(nil), hostCPUSet...)
	// What Debian 12's libvirt 9.0 lacks of KubeVirt's forms, and a plain
	// host may mount several hugepage sizes: as the launcher converts there.
	o.HostFacts.Lacks = append([]convert.Lack(nil), debian12Lacks...)
	o.HugepageSize = true
	stateDir := g.cfg.StateDir
	if stateDir == "" {
		stateDir = convert.DefaultStateDir
	}
	layout := convert.HostLayout{
		StateDir:      stateDir,
		ImageStore:    convert.DefaultImageStore,
		HostDiskAllow: []string{HostDiskDir},
	}
	if len(g.claims) > 0 {
		layout.Claims = g.claims
	}
	if len(g.networks) > 0 {
		layout.Networks = g.networks
	}
	if len(g.hostDevices) > 0 {
		o.HostDevices = g.hostDevices
	}
	o.Layout = layout
	return o
}

// debian12Lacks are the forms of KubeVirt's domain that Debian 12's libvirt
// 9.0 does not have, as package hostcaps finds them there.
var debian12Lacks = []convert.Lack{
	convert.LackSlotlessMaxMemory,
	convert.LackDiscardGranularity,
	convert.LackTLBFlushDirectExtended,
	convert.LackDiskIOThreads,
	convert.LackPvpanic,
}
