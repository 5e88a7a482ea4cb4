package api

import (
	"strings"

	k8sv1 "k8s.io/api/core/v1"
	v1 "kubevirt.io/api/core/v1"
)

// defaultPullPolicies sets a containerDisk's imagePullPolicy, when unset,
// as Kubernetes does for containers: Always for ":latest" or untagged
// images, IfNotPresent otherwise.
func defaultPullPolicies(vmi *v1.VirtualMachineInstance, _ ClusterConfig) {
	for i := range vmi.Spec.Volumes {
		cd := vmi.Spec.Volumes[i].ContainerDisk
		if cd == nil || cd.ImagePullPolicy != "" {
			continue
		}
		if strings.HasSuffix(cd.Image, ":latest") || !strings.ContainsAny(cd.Image, ":@") {
			cd.ImagePullPolicy = k8sv1.PullAlways
		} else {
			cd.ImagePullPolicy = k8sv1.PullIfNotPresent
		}
	}
}

// defaultVolumeDisks adds a disk (of no kind yet: it becomes a plain disk
// on the default bus) for every volume that no disk and no filesystem
// names, in the order of the volumes: one per name, none for a volume
// without a name (Validate refuses it on its own path).
func defaultVolumeDisks(vmi *v1.VirtualMachineInstance, _ ClusterConfig) {
	devs := &vmi.Spec.Domain.Devices
	used := make(map[string]struct{}, len(devs.Disks)+len(devs.Filesystems))
	for i := range devs.Disks {
		used[devs.Disks[i].Name] = struct{}{}
	}
	for i := range devs.Filesystems {
		used[devs.Filesystems[i].Name] = struct{}{}
	}
	for i := range vmi.Spec.Volumes {
		name := vmi.Spec.Volumes[i].Name
		if _, ok := used[name]; !ok && name != "" {
			devs.Disks = append(devs.Disks, v1.Disk{Name: name})
			used[name] = struct{}{}
		}
	}
}

// defaultDiskBus puts disks, CD-ROMs and LUNs without a bus on SATA, the
// bus every guest OS drives out of the box (q35 has no IDE).
func defaultDiskBus(vmi *v1.VirtualMachineInstance, _ ClusterConfig) {
	for i := range vmi.Spec.Domain.Devices.Disks {
		dd := &vmi.Spec.Domain.Devices.Disks[i].DiskDevice
		if dd.Disk != nil && dd.Disk.Bus == "" {
			dd.Disk.Bus = v1.DiskBusSATA
		}
		if dd.CDRom != nil && dd.CDRom.Bus == "" {
			dd.CDRom.Bus = v1.DiskBusSATA
		}
		if dd.LUN != nil && dd.LUN.Bus == "" {
			dd.LUN.Bus = v1.DiskBusSATA
		}
	}
}

// defaultWatchdog makes a watchdog without a model an i6300esb and gives
// it the action reset when it names none.
func defaultWatchdog(vmi *v1.VirtualMachineInstance, _ ClusterConfig) {
	w := vmi.Spec.Domain.Devices.Watchdog
	if w == nil {
		return
	}
	if w.I6300ESB == nil {
		w.I6300ESB = &v1.I6300ESBWatchdog{}
	}
	if w.I6300ESB.Action == "" {
		w.I6300ESB.Action = v1.WatchdogActionReset
	}
}

// defaultPodInterface gives a VMI with neither interfaces nor networks one
// interface named "default" with the cluster's default binding (bridge,
// or masquerade) on the pod network — unless autoattachPodInterface is
// false.
func defaultPodInterface(vmi *v1.VirtualMachineInstance, cfg ClusterConfig) {
	spec := &vmi.Spec
	if a := spec.Domain.Devices.AutoattachPodInterface; a != nil && !*a {
		return
	}
	if len(spec.Networks) != 0 || len(spec.Domain.Devices.Interfaces) != 0 {
		return
	}
	iface := v1.DefaultBridgeNetworkInterface()
	if v1.NetworkInterfaceType(cfg.DefaultNetworkInterface) == v1.MasqueradeInterface {
		iface = v1.DefaultMasqueradeNetworkInterface()
	}
	spec.Domain.Devices.Interfaces = []v1.Interface{*iface}
	spec.Networks = []v1.Network{*v1.DefaultPodNetwork()}
}
