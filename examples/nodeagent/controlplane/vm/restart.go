package vm

import (
	"time"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// restartRequiredMessage is KubeVirt's message of the RestartRequired
// condition.
const restartRequiredMessage = "a non-live-updatable field was changed in the template spec"

// liveUpdatable copies into last the parts of the template spec of cur
// that a running VMI takes without a restart, so that comparing the two
// finds only the changes that need one. What is live here: the template's
// hot-pluggable volumes and their disks (syncHotplug carries them to the
// VMI), when nothing else of the volumes and disks changed, as KubeVirt's
// validLiveUpdateVolumes and validLiveUpdateDisks decide. Everything else
// needs a restart, as in KubeVirt with its Stage rollout strategy
// (KubeVirt's LiveUpdate strategy adds CPU sockets, guest memory, node
// selector, affinity and tolerations).
func liveUpdatable(last, cur *v1.VirtualMachineInstanceSpec) {
	lastVols, lastDisks := withoutHotplug(last)
	curVols, curDisks := withoutHotplug(cur)
	if equality.Semantic.DeepEqual(lastVols, curVols) && equality.Semantic.DeepEqual(lastDisks, curDisks) {
		last.Volumes = cur.Volumes
		last.Domain.Devices.Disks = cur.Domain.Devices.Disks
	}
}

// withoutHotplug is the volumes and disks of spec without its
// hot-pluggable volumes and their disks.
func withoutHotplug(spec *v1.VirtualMachineInstanceSpec) ([]v1.Volume, []v1.Disk) {
	var vols []v1.Volume
	hot := map[string]bool{}
	for _, vol := range spec.Volumes {
		if convert.Hotpluggable(&vol) {
			hot[vol.Name] = true
			continue
		}
		vols = append(vols, vol)
	}
	var disks []v1.Disk
	for _, d := range spec.Domain.Devices.Disks {
		if !hot[d.Name] {
			disks = append(disks, d)
		}
	}
	return vols, disks
}

// syncRestartRequired sets vm's RestartRequired condition when its
// template spec differs from the one its running VMI was made from
// (lastSpec, from its latest revision; nil: no VMI) in a part that is not
// live-updatable, and removes it otherwise, as KubeVirt's
// syncRestartRequired does. A firmware UUID the VMI already has does not
// count as a change (KubeVirt's firmware synchronizer may write the VMI's
// UUID into the template). It tells whether a restart is required.
func syncRestartRequired(lastSpec *v1.VirtualMachineSpec, vm *v1.VirtualMachine, vmi *v1.VirtualMachineInstance, now time.Time) bool {
	if lastSpec == nil || lastSpec.Template == nil || vm.Spec.Template == nil {
		return false
	}
	last := lastSpec.Template.Spec.DeepCopy()
	cur := &vm.Spec.Template.Spec
	liveUpdatable(last, cur)
	if vmi != nil && vmi.Spec.Domain.Firmware != nil && cur.Domain.Firmware != nil && vmi.Spec.Domain.Firmware.UUID == cur.Domain.Firmware.UUID {
		if last.Domain.Firmware == nil {
			last.Domain.Firmware = &v1.Firmware{}
		}
		last.Domain.Firmware.UUID = cur.Domain.Firmware.UUID
	}
	if !equality.Semantic.DeepEqual(last, cur) {
		setCondition(vm, v1.VirtualMachineCondition{Type: v1.VirtualMachineRestartRequired, Status: k8sv1.ConditionTrue,
			Message: restartRequiredMessage, LastTransitionTime: metav1.NewTime(now)})
		return true
	}
	removeCondition(vm, v1.VirtualMachineRestartRequired)
	return false
}
