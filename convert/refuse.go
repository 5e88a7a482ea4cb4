package convert

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// unsupported refuses the VMI fields that no area of the domain honours.
//
// Fields that only steer a cluster's scheduler or pod (nodeSelector,
// affinity, tolerations, priorityClassName, schedulerName,
// topologySpreadConstraints, evictionStrategy, dnsPolicy, dnsConfig,
// subdomain, hostname) give the guest nothing to see and are accepted.
// Fields that would change the virtual machine or what KubeVirt does with it,
// and that this library cannot do without a cluster, are refused here;
// every other field is honoured or refused by the area that owns it. So is
// the kubevirt.io/ignitiondata annotation, which KubeVirt's converter turns
// into a QEMU command line argument naming a file virt-launcher writes (and
// its admission refuses unless the ExperimentalIgnitionSupport gate is on).
func (c *converter) unsupported(*libvirtxml.Domain) error {
	for _, r := range refusals {
		if r.set(c.vmi) {
			return field.Forbidden(r.path, r.why)
		}
	}
	if a := c.spec.Architecture; a != "" && a != "amd64" {
		return field.NotSupported(specPath.Child("architecture"), a, []string{"amd64"})
	}
	return nil
}

// refusals are the fields unsupported refuses, in the order it checks them.
var refusals = []struct {
	set  func(vmi *v1.VirtualMachineInstance) bool
	path *field.Path
	why  string
}{
	{func(vmi *v1.VirtualMachineInstance) bool { return vmi.Spec.LivenessProbe != nil }, specPath.Child("livenessProbe"), "probes are run by KubeVirt's virt-handler, not by libvirt"},
	{func(vmi *v1.VirtualMachineInstance) bool { return vmi.Spec.ReadinessProbe != nil }, specPath.Child("readinessProbe"), "probes are run by KubeVirt's virt-handler, not by libvirt"},
	{func(vmi *v1.VirtualMachineInstance) bool { return len(vmi.Spec.AccessCredentials) > 0 }, specPath.Child("accessCredentials"), "access credentials are propagated by KubeVirt's guest agent integration"},
	{func(vmi *v1.VirtualMachineInstance) bool { return len(vmi.Spec.ResourceClaims) > 0 }, specPath.Child("resourceClaims"), "dynamic resource allocation needs a cluster"},
	{func(vmi *v1.VirtualMachineInstance) bool { return len(vmi.Spec.UtilityVolumes) > 0 }, specPath.Child("utilityVolumes"), "utility volumes need a cluster"},
	{func(vmi *v1.VirtualMachineInstance) bool { return vmi.Spec.Domain.LaunchSecurity != nil }, domainPath.Child("launchSecurity"), "confidential computing (SEV, TDX, Secure Execution) is not converted"},
	{func(vmi *v1.VirtualMachineInstance) bool { return len(vmi.Spec.Domain.Devices.Filesystems) > 0 }, devicesPath.Child("filesystems"), "virtiofs filesystems need virtiofsd, which the converter does not set up"},
	{func(vmi *v1.VirtualMachineInstance) bool { return vmi.Annotations[v1.IgnitionAnnotation] != "" }, field.NewPath("metadata", "annotations").Key(v1.IgnitionAnnotation),
		"Ignition data reaches the guest through a file KubeVirt writes and passes with -fw_cfg (feature gate ExperimentalIgnitionSupport); the converter does not"},
}
