package convert

import (
	"slices"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// SEV guest policy bits (AMD's SEV API, the policy KubeVirt writes).
const (
	sevPolicyNoDebug        uint = 1 << 0
	sevPolicyEncryptedState uint = 1 << 2
)

// launchSecurity writes <launchSecurity type="sev"> for an AMD SEV or
// SEV-ES guest (spec.domain.launchSecurity.sev), as KubeVirt's converter
// does: the policy (no debugging; encrypted state for SEV-ES,
// sev.policy.encryptedState), and the VMI's dhCert and session. The
// C-bit position and reduced physical address bits are left to libvirt,
// which reads them from the host, as KubeVirt leaves them. A host whose
// facts list its launch-security forms (HostFacts.LaunchSecurity) must
// have "sev", and "sev-es" for SEV-ES. The guest's virtio devices get an
// IOMMU (facts.iommu) and its EFI firmware is Options.EFI.SEVCode (the os
// area). SEV-SNP and TDX are refused (unsupported).
func (c *converter) launchSecurity(d *libvirtxml.Domain) error {
	ls := c.spec.Domain.LaunchSecurity
	if ls == nil || ls.SEV == nil {
		return nil
	}
	path := domainPath.Child("launchSecurity")
	policy := sevPolicyNoDebug
	es := ls.SEV.Policy != nil && switchedOn(ls.SEV.Policy.EncryptedState)
	if es {
		policy |= sevPolicyEncryptedState
	}
	if offered := c.opts.HostFacts.LaunchSecurity; offered != nil {
		var probs problems
		if !slices.Contains(offered, "sev") {
			probs.add(unsupported(path, "sev", "this host's libvirt offers no AMD SEV; its launch-security forms are", offered))
		}
		if es && !slices.Contains(offered, "sev-es") {
			probs.add(unsupported(path.Child("sev", "policy", "encryptedState"), "sev-es", "this host's libvirt offers no SEV-ES (no room for encrypted-state guests); its launch-security forms are", offered))
		}
		if err := probs.err(); err != nil {
			return err
		}
	}
	d.LaunchSecurity = &libvirtxml.DomainLaunchSecurity{SEV: &libvirtxml.DomainLaunchSecuritySEV{
		Policy: &policy, DHCert: ls.SEV.DHCert, Session: ls.SEV.Session,
	}}
	return nil
}

// usesSEV tells whether vmi is an AMD SEV guest (SEV, SEV-ES or SEV-SNP),
// whose virtio devices need an IOMMU to reach unencrypted memory
// (KubeVirt's IsSEVVMI).
func usesSEV(vmi *v1.VirtualMachineInstance) bool {
	ls := vmi.Spec.Domain.LaunchSecurity
	return ls != nil && (ls.SEV != nil || ls.SNP != nil)
}

// iommuOn is the value of a virtio device driver's iommu attribute: "on"
// for a SEV guest (facts.iommu), "" otherwise.
func (c *converter) iommuOn() string {
	if c.facts.iommu {
		return "on"
	}
	return ""
}
