package convert

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// unsupported refuses the VMI fields that no area of the domain honours,
// because what honours them in KubeVirt is missing on a plain libvirt host:
// KubeVirt's node agent (virt-handler: probes, the guest agent's access
// credentials), its cluster (dynamic resource
// allocation, utility volumes), or something the
// converter does not set up (confidential computing but SEV,
// Ignition's -fw_cfg file, ACPI tables read from secret
// volumes, changed block tracking, device metadata in a config drive).
// Each refusal is in one of the two tables below, with its reason.
//
// Fields that only steer a cluster's scheduler or pod (nodeSelector,
// affinity, tolerations, priorityClassName, schedulerName,
// topologySpreadConstraints, evictionStrategy, dnsPolicy, dnsConfig,
// subdomain, hostname) give the guest nothing to see and are accepted.
// Access credentials propagated by noCloud or configDrive are accepted
// too: they change the cloud-init volume the launcher writes, not the
// domain.
func (c *converter) unsupported(*libvirtxml.Domain) error {
	var probs problems
	for _, r := range refusals {
		if r.set(c.vmi) {
			probs.add(field.Forbidden(r.path, r.why))
		}
	}
	for _, r := range itemRefusals {
		for i := range r.count(c.vmi) {
			if r.set(c.vmi, i) {
				probs.add(field.Forbidden(r.path(i), r.why))
			}
		}
	}
	return probs.err()
}

// refusals are the fields of a VMI that unsupported refuses wherever they
// are set, in the order it reports them.
var refusals = []struct {
	set  func(vmi *v1.VirtualMachineInstance) bool
	path *field.Path
	why  string
}{
	{func(vmi *v1.VirtualMachineInstance) bool { return vmi.Spec.LivenessProbe != nil }, specPath.Child("livenessProbe"), "probes are run by KubeVirt's virt-handler, not by libvirt"},
	{func(vmi *v1.VirtualMachineInstance) bool { return vmi.Spec.ReadinessProbe != nil }, specPath.Child("readinessProbe"), "probes are run by KubeVirt's virt-handler, not by libvirt"},
	{func(vmi *v1.VirtualMachineInstance) bool { return len(vmi.Spec.ResourceClaims) > 0 }, specPath.Child("resourceClaims"), "dynamic resource allocation needs a cluster"},
	{func(vmi *v1.VirtualMachineInstance) bool { return len(vmi.Spec.UtilityVolumes) > 0 }, specPath.Child("utilityVolumes"), "utility volumes need a cluster"},
	{func(vmi *v1.VirtualMachineInstance) bool {
		ls := vmi.Spec.Domain.LaunchSecurity
		return ls != nil && ls.SEV == nil
	}, domainPath.Child("launchSecurity"), "confidential computing other than AMD SEV and SEV-ES (SEV-SNP, TDX, Secure Execution) is not converted"},
	{func(vmi *v1.VirtualMachineInstance) bool {
		ls := vmi.Spec.Domain.LaunchSecurity
		return ls != nil && ls.SEV != nil && ls.SEV.Attestation != nil
	}, domainPath.Child("launchSecurity", "sev", "attestation"),
		"SEV attestation (the launch measurement and secret injection of the sev/* subresources) is served by KubeVirt's virt-handler, which is not available"},
	{func(vmi *v1.VirtualMachineInstance) bool {
		return vmi.Spec.Domain.Firmware != nil && vmi.Spec.Domain.Firmware.ACPI != nil
	}, firmwarePath.Child("acpi"), "ACPI SLIC/MSDM tables from secret volumes are not converted"},
	{func(vmi *v1.VirtualMachineInstance) bool { return vmi.Annotations[v1.IgnitionAnnotation] != "" }, annotationsPath.Key(v1.IgnitionAnnotation),
		"Ignition data reaches the guest through a file KubeVirt writes and passes with -fw_cfg (feature gate ExperimentalIgnitionSupport); the converter does not"},
}

// itemRefusals are the fields of the items of a VMI's lists that
// unsupported refuses wherever they are set: set(vmi, i) for each of the
// count(vmi) items, refused at path(i).
var itemRefusals = []struct {
	count func(vmi *v1.VirtualMachineInstance) int
	set   func(vmi *v1.VirtualMachineInstance, i int) bool
	path  func(i int) *field.Path
	why   string
}{
	{numAccessCredentials, func(vmi *v1.VirtualMachineInstance, i int) bool {
		k := vmi.Spec.AccessCredentials[i].SSHPublicKey
		return k != nil && k.PropagationMethod.QemuGuestAgent != nil
	}, func(i int) *field.Path {
		return specPath.Child("accessCredentials").Index(i).Child("sshPublicKey", "propagationMethod", "qemuGuestAgent")
	}, "SSH keys reach the guest agent through KubeVirt's virt-handler, which is not available; propagate them with noCloud or configDrive"},
	{numAccessCredentials, func(vmi *v1.VirtualMachineInstance, i int) bool {
		p := vmi.Spec.AccessCredentials[i].UserPassword
		return p != nil && p.PropagationMethod.QemuGuestAgent != nil
	}, func(i int) *field.Path {
		return specPath.Child("accessCredentials").Index(i).Child("userPassword", "propagationMethod", "qemuGuestAgent")
	}, "passwords reach the guest agent through KubeVirt's virt-handler, which is not available"},
	{numDisks, func(vmi *v1.VirtualMachineInstance, i int) bool {
		return switchedOn(vmi.Spec.Domain.Devices.Disks[i].ChangedBlockTracking)
	}, func(i int) *field.Path { return disksPath.Index(i).Child("changedBlockTracking") }, "changed block tracking is not supported"},
	// With a cloudInitConfigDrive volume, KubeVirt writes each tagged
	// device's guest address into the config drive's device metadata;
	// without one it ignores tags, and so does the converter.
	{numInterfaces, func(vmi *v1.VirtualMachineInstance, i int) bool {
		iface := &vmi.Spec.Domain.Devices.Interfaces[i]
		return iface.Tag != "" && iface.State != v1.InterfaceStateAbsent && hasConfigDrive(vmi)
	}, func(i int) *field.Path { return interfacesPath.Index(i).Child("tag") }, deviceTagsWhy},
	{numHostDevices, func(vmi *v1.VirtualMachineInstance, i int) bool {
		return vmi.Spec.Domain.Devices.HostDevices[i].Tag != "" && hasConfigDrive(vmi)
	}, func(i int) *field.Path { return hostDevicesPath.Index(i).Child("tag") }, deviceTagsWhy},
	{numGPUs, func(vmi *v1.VirtualMachineInstance, i int) bool {
		return vmi.Spec.Domain.Devices.GPUs[i].Tag != "" && hasConfigDrive(vmi)
	}, func(i int) *field.Path { return gpusPath.Index(i).Child("tag") }, deviceTagsWhy},
}

// deviceTagsWhy is why a device tag is refused.
const deviceTagsWhy = "device tags in the config drive's device metadata are not written"

// The lengths of the lists itemRefusals go through.
var (
	numAccessCredentials = func(vmi *v1.VirtualMachineInstance) int { return len(vmi.Spec.AccessCredentials) }
	numDisks             = func(vmi *v1.VirtualMachineInstance) int { return len(vmi.Spec.Domain.Devices.Disks) }
	numInterfaces        = func(vmi *v1.VirtualMachineInstance) int { return len(vmi.Spec.Domain.Devices.Interfaces) }
	numHostDevices       = func(vmi *v1.VirtualMachineInstance) int { return len(vmi.Spec.Domain.Devices.HostDevices) }
	numGPUs              = func(vmi *v1.VirtualMachineInstance) int { return len(vmi.Spec.Domain.Devices.GPUs) }
)

// hasConfigDrive tells whether a volume of the VMI is a cloudInitConfigDrive.
func hasConfigDrive(vmi *v1.VirtualMachineInstance) bool {
	for i := range vmi.Spec.Volumes {
		if vmi.Spec.Volumes[i].CloudInitConfigDrive != nil {
			return true
		}
	}
	return false
}
