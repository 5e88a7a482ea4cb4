package convert

import v1 "kubevirt.io/api/core/v1"

// Hotpluggable tells whether a volume is a hot-pluggable claim or data
// volume (hotpluggable: true): one KubeVirt attaches through an attachment
// pod rather than the VMI's own, whether it was in the spec when the VMI
// started or added to it later, and reports in status.volumeStatus with
// hotplugVolume.
func Hotpluggable(v *v1.Volume) bool {
	return v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.Hotpluggable ||
		v.DataVolume != nil && v.DataVolume.Hotpluggable
}
