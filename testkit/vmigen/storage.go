package vmigen

import (
	"encoding/base64"
	"path"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// volumeKind is the source of a generated volume, by its field name.
type volumeKind string

// The volume sources drawn.
const (
	volContainerDisk   volumeKind = "containerDisk"
	volPVC             volumeKind = "persistentVolumeClaim"
	volDataVolume      volumeKind = "dataVolume"
	volEphemeral       volumeKind = "ephemeral"
	volEmptyDisk       volumeKind = "emptyDisk"
	volHostDisk        volumeKind = "hostDisk"
	volNoCloud         volumeKind = "cloudInitNoCloud"
	volConfigDrive     volumeKind = "cloudInitConfigDrive"
	volConfigMap       volumeKind = "configMap"
	volSecret          volumeKind = "secret"
	volDownwardAPI     volumeKind = "downwardAPI"
	volServiceAccount  volumeKind = "serviceAccount"
	volSysprep         volumeKind = "sysprep"
	volDownwardMetrics volumeKind = "downwardMetrics"
)

// volumeWeights are how often each source is drawn for a disk.
var volumeWeights = []weighted[volumeKind]{
	{8, volContainerDisk}, {4, volPVC}, {3, volDataVolume}, {1, volEphemeral}, {4, volEmptyDisk},
	{2, volHostDisk}, {4, volNoCloud}, {1, volConfigDrive}, {1, volConfigMap}, {1, volSecret},
	{1, volDownwardAPI}, {1, volServiceAccount}, {1, volSysprep}, {1, volDownwardMetrics},
}

// onePerVMI are the sources a VMI has at most one of: KubeVirt allows one
// serviceAccount and one downwardMetrics volume, and both layouts put the
// cloud-init ISOs at one path per VMI.
var onePerVMI = map[volumeKind]bool{
	volNoCloud: true, volConfigDrive: true, volServiceAccount: true, volDownwardMetrics: true,
}

// volumeNames are the names a volume of each source is given (and its
// disk): the first of a source, then with a number.
var volumeNames = map[volumeKind]string{
	volContainerDisk: "rootdisk", volPVC: "data", volDataVolume: "dv", volEphemeral: "scratch",
	volEmptyDisk: "empty", volHostDisk: "hostdisk", volNoCloud: "cloudinit", volConfigDrive: "configdrive",
	volConfigMap: "config", volSecret: "secret", volDownwardAPI: "podinfo", volServiceAccount: "sa",
	volSysprep: "sysprep", volDownwardMetrics: "metrics",
}

// containerImages are the containerDisk images drawn.
var containerImages = []string{
	"quay.io/containerdisks/fedora:40",
	"quay.io/kubevirt/cirros-container-disk-demo:v1.4.0",
	"registry.example.com/disks/debian:12",
	"localhost/vmi2libvirt/testguest:v1",
	"quay.io/containerdisks/ubuntu@sha256:" + "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9",
}

// storage draws the disks and their volumes: the sources, in the order of
// the disks, then for each a disk, CD-ROM or LUN on a bus its kind allows,
// with its options; at times a volume without a disk (Default adds one)
// and one or two virtiofs filesystems.
func (g *gen) storage() {
	g.metricsDevice = g.p(0.06)
	count := pickW(g, weighted[int]{2, 0}, weighted[int]{4, 1}, weighted[int]{4, 2}, weighted[int]{2, 3}, weighted[int]{1, 4}, weighted[int]{1, 6})
	if count == 0 && g.kv && g.dedicated && g.spec.Domain.IOThreadsPolicy != nil {
		// KubeVirt's converter fails on an IO-thread policy with dedicated
		// CPUs and no disk ("domain is missing IOThreads", vcpu.go:405).
		count = 1
	}
	kinds := make([]volumeKind, 0, count)
	taken := map[volumeKind]bool{}
	for range count {
		k := pickW(g, volumeWeights...)
		if onePerVMI[k] && taken[k] {
			k = volEmptyDisk
		}
		switch {
		case k == volSysprep && g.host && !g.kv:
			k = volConfigMap // the host layout has no place for sysprep
		case k == volDownwardMetrics && g.host && !g.kv:
			k = volEmptyDisk // nor for the metrics disk
		case k == volDownwardMetrics && g.metricsDevice:
			k = volEmptyDisk // a VMI has the metrics disk or the metrics device
		}
		taken[k] = true
		kinds = append(kinds, k)
	}
	g.configDrive = taken[volConfigDrive]
	for _, k := range kinds {
		g.volume(k)
	}
	if g.p(0.12) {
		g.filesystem()
		if g.p(0.25) {
			g.filesystem()
		}
	}
}

// volume adds one volume of kind k and, most of the time, its disk.
func (g *gen) volume(k volumeKind) {
	name := g.name(volumeNames[k])
	vi := len(g.spec.Volumes)
	vol := v1.Volume{Name: name}
	src := &vol.VolumeSource
	vp := volumesPath.Index(vi)
	claimBlock := false
	qcow2 := k == volContainerDisk || k == volEphemeral || k == volEmptyDisk // in both layouts
	switch k {
	case volContainerDisk:
		cd := &v1.ContainerDiskSource{Image: pick(g, containerImages...)}
		if g.p(0.15) {
			cd.Path = pick(g, "/disk/disk.qcow2", "/disk/fedora.img", "/images/root.raw")
		}
		if g.p(0.2) {
			cd.ImagePullPolicy = pick(g, k8sv1.PullAlways, k8sv1.PullIfNotPresent, k8sv1.PullNever)
		}
		src.ContainerDisk = cd
	case volPVC, volDataVolume, volEphemeral:
		claim := g.name("claim-" + name)
		claimBlock = g.host && g.p(0.4)
		if g.mapClaim(claim, claimBlock) == "qcow2" {
			qcow2 = true
		}
		switch k {
		case volPVC:
			src.PersistentVolumeClaim = &v1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}
		case volDataVolume:
			src.DataVolume = &v1.DataVolumeSource{Name: claim}
		case volEphemeral:
			src.Ephemeral = &v1.EphemeralVolumeSource{PersistentVolumeClaim: &k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}
		}
	case volEmptyDisk:
		src.EmptyDisk = &v1.EmptyDiskSource{Capacity: q(pick(g, "512Mi", "1Gi", "10Gi", "2G"))}
	case volHostDisk:
		hd := &v1.HostDisk{Path: path.Join(HostDiskDir, name+".img"), Type: v1.HostDiskExists}
		if g.p(0.5) {
			hd.Type = v1.HostDiskExistsOrCreate
			if g.p(0.8) {
				hd.Capacity = q(pick(g, "1Gi", "10Gi"))
			}
		}
		if g.p(0.1) {
			hd.Shared = ptr(g.p(0.5))
		}
		src.HostDisk = hd
	case volNoCloud:
		s := &v1.CloudInitNoCloudSource{}
		s.UserData, s.UserDataBase64, s.UserDataSecretRef, s.NetworkData, s.NetworkDataBase64, s.NetworkDataSecretRef = g.cloudInit()
		src.CloudInitNoCloud = s
	case volConfigDrive:
		s := &v1.CloudInitConfigDriveSource{}
		s.UserData, s.UserDataBase64, s.UserDataSecretRef, s.NetworkData, s.NetworkDataBase64, s.NetworkDataSecretRef = g.cloudInit()
		src.CloudInitConfigDrive = s
	case volConfigMap:
		src.ConfigMap = &v1.ConfigMapVolumeSource{LocalObjectReference: k8sv1.LocalObjectReference{Name: "cm-" + name}, VolumeLabel: g.volumeLabel()}
		if g.p(0.1) {
			src.ConfigMap.Optional = ptr(true)
		}
	case volSecret:
		src.Secret = &v1.SecretVolumeSource{SecretName: "secret-" + name, VolumeLabel: g.volumeLabel()}
	case volDownwardAPI:
		src.DownwardAPI = &v1.DownwardAPIVolumeSource{
			Fields:      []k8sv1.DownwardAPIVolumeFile{{Path: "labels", FieldRef: &k8sv1.ObjectFieldSelector{FieldPath: "metadata.labels"}}},
			VolumeLabel: g.volumeLabel(),
		}
	case volServiceAccount:
		src.ServiceAccount = &v1.ServiceAccountVolumeSource{ServiceAccountName: pick(g, "default", "builder")}
	case volSysprep:
		if g.p(0.5) {
			src.Sysprep = &v1.SysprepSource{ConfigMap: &k8sv1.LocalObjectReference{Name: "unattend"}}
		} else {
			src.Sysprep = &v1.SysprepSource{Secret: &k8sv1.LocalObjectReference{Name: "unattend"}}
		}
		if g.host {
			g.beyond(vp.Child("sysprep"))
		}
	case volDownwardMetrics:
		src.DownwardMetrics = &v1.DownwardMetricsVolumeSource{}
		if g.host {
			g.beyond(vp.Child("downwardMetrics"))
		}
	}
	g.spec.Volumes = append(g.spec.Volumes, vol)
	// A volume without a disk gets a plain SATA disk from Default; the
	// downward metrics disk must be virtio, and a read-only claim needs a
	// read-only disk, so those always have their disk.
	if k != volDownwardMetrics && g.p(0.08) {
		return
	}
	g.disk(name, k, claimBlock, qcow2)
}

// mapClaim maps a claim to a host disk in the host layout: a raw or
// qcow2 file under ClaimDir, or a logical volume under ClaimVG. It returns
// the disk's format ("" is raw).
func (g *gen) mapClaim(claim string, block bool) (format string) {
	if !g.host {
		return "raw" // KubeVirt's claims hold a raw disk.img
	}
	if block {
		g.claims[claim] = convert.DiskSource{Type: "block", Path: path.Join(ClaimVG, claim), Format: "raw"}
		return "raw"
	}
	format = pick(g, "raw", "qcow2", "")
	file := path.Join(ClaimDir, claim+".img")
	if format == "qcow2" {
		file = path.Join(ClaimDir, claim+".qcow2")
	}
	g.claims[claim] = convert.DiskSource{Type: pick(g, "file", ""), Path: file, Format: format}
	return format
}

// volumeLabel draws a config volume's ISO label (mostly none: KubeVirt's
// "cfgdata").
func (g *gen) volumeLabel() string {
	if g.p(0.2) {
		return pick(g, "config", "CFG1", "podinfo")
	}
	return ""
}

// cloudInit draws cloud-init user data and network data, each inline,
// in base64 or from a Secret, with at least one of the two.
func (g *gen) cloudInit() (user, user64 string, userSecret *k8sv1.LocalObjectReference, network, network64 string, networkSecret *k8sv1.LocalObjectReference) {
	userData := "#cloud-config\nhostname: " + g.vmi.Name + "\n"
	networkData := "version: 2\nethernets:\n  eth0:\n    dhcp4: true\n"
	hasUser := g.p(0.9)
	if hasUser {
		switch pickW(g, weighted[string]{6, "plain"}, weighted[string]{2, "base64"}, weighted[string]{1, "secret"}) {
		case "plain":
			user = userData
		case "base64":
			user64 = base64.StdEncoding.EncodeToString([]byte(userData))
		case "secret":
			userSecret = &k8sv1.LocalObjectReference{Name: "userdata"}
		}
	}
	if !hasUser || g.p(0.3) {
		switch pickW(g, weighted[string]{4, "plain"}, weighted[string]{1, "base64"}, weighted[string]{1, "secret"}) {
		case "plain":
			network = networkData
		case "base64":
			network64 = base64.StdEncoding.EncodeToString([]byte(networkData))
		case "secret":
			networkSecret = &k8sv1.LocalObjectReference{Name: "networkdata"}
		}
	}
	return
}

// deviceKinds are the device kinds each source is drawn as, with weights:
// disk, cdrom, lun.
var deviceKinds = map[volumeKind][]weighted[string]{
	volContainerDisk:   {{8, "disk"}, {2, "cdrom"}},
	volPVC:             {{6, "disk"}, {1, "cdrom"}, {2, "lun"}},
	volDataVolume:      {{6, "disk"}, {1, "cdrom"}, {2, "lun"}},
	volEphemeral:       {{1, "disk"}},
	volEmptyDisk:       {{1, "disk"}},
	volHostDisk:        {{1, "disk"}},
	volNoCloud:         {{2, "disk"}, {3, "cdrom"}},
	volConfigDrive:     {{2, "disk"}, {3, "cdrom"}},
	volConfigMap:       {{3, "disk"}, {2, "cdrom"}},
	volSecret:          {{3, "disk"}, {2, "cdrom"}},
	volDownwardAPI:     {{3, "disk"}, {2, "cdrom"}},
	volServiceAccount:  {{3, "disk"}, {2, "cdrom"}},
	volSysprep:         {{1, "disk"}, {3, "cdrom"}},
	volDownwardMetrics: {{1, "disk"}},
}

// disk adds the disk of volume name (of kind k; claimBlock when its claim
// is a block device in the host layout, qcow2 when the volume is a qcow2
// file).
func (g *gen) disk(name string, k volumeKind, claimBlock, qcow2 bool) {
	di := len(g.spec.Domain.Devices.Disks)
	dp := disksPath.Index(di)
	d := v1.Disk{Name: name}
	kind := pickW(g, deviceKinds[k]...)
	if kind == "lun" {
		// A LUN needs a block device: in the Supported profile only a
		// block claim of the host layout; the KubeVirt profile also puts
		// one on a file (KubeVirt's claims are file systems in kvdiff).
		switch {
		case claimBlock:
		case g.kv:
			g.beyond(dp.Child("lun"))
		default:
			kind = "disk"
		}
	}
	if k == volDownwardMetrics {
		d.Disk = &v1.DiskTarget{Bus: v1.DiskBusVirtio}
		g.spec.Domain.Devices.Disks = append(g.spec.Domain.Devices.Disks, d)
		return
	}
	var bus v1.DiskBus
	switch kind {
	case "disk":
		bus = pickW(g, weighted[v1.DiskBus]{5, v1.DiskBusVirtio}, weighted[v1.DiskBus]{3, v1.DiskBusSATA},
			weighted[v1.DiskBus]{2, v1.DiskBusSCSI}, weighted[v1.DiskBus]{1, v1.DiskBusUSB}, weighted[v1.DiskBus]{2, ""})
		t := &v1.DiskTarget{Bus: bus}
		if bus != v1.DiskBusSATA && bus != "" && g.p(0.1) {
			t.ReadOnly = true
		}
		if bus == v1.DiskBusVirtio && g.p(0.08) {
			t.PciAddress = g.pciAddress()
		}
		d.Disk = t
	case "cdrom":
		bus = pickW(g, weighted[v1.DiskBus]{4, v1.DiskBusSATA}, weighted[v1.DiskBus]{2, v1.DiskBusSCSI},
			weighted[v1.DiskBus]{1, v1.DiskBusUSB}, weighted[v1.DiskBus]{2, ""})
		t := &v1.CDRomTarget{Bus: bus}
		if g.p(0.1) {
			t.ReadOnly = ptr(true)
		}
		if g.p(0.1) {
			t.Tray = pick(g, v1.TrayStateOpen, v1.TrayStateClosed)
		}
		d.CDRom = t
	case "lun":
		bus = pickW(g, weighted[v1.DiskBus]{4, v1.DiskBusSCSI}, weighted[v1.DiskBus]{1, v1.DiskBusVirtio})
		if g.kv && g.p(0.1) {
			// Default puts a LUN without a bus on SATA, which KubeVirt
			// admits and libvirt refuses.
			bus = pick(g, v1.DiskBusSATA, "")
			g.beyond(dp.Child("lun", "bus"))
		}
		t := &v1.LunTarget{Bus: bus}
		if g.p(0.1) {
			t.ReadOnly = true
		}
		if !g.kv && g.p(0.3) {
			// Persistent reservation: behind a gate kvdiff leaves off.
			t.Reservation = true
		}
		d.LUN = t
	}
	if bus == "" {
		bus = v1.DiskBusSATA // Default's
	}
	// A read-only claim needs a read-only disk.
	if k == volPVC && g.p(0.1) && (d.CDRom != nil || d.Disk != nil && d.Disk.ReadOnly || d.LUN != nil && d.LUN.ReadOnly) {
		g.spec.Volumes[len(g.spec.Volumes)-1].PersistentVolumeClaim.ReadOnly = true
	}
	g.diskOptions(&d, dp, kind, bus, qcow2)
	g.spec.Domain.Devices.Disks = append(g.spec.Domain.Devices.Disks, d)
}

// diskOptions draws a disk's options: serial, boot order, cache, io,
// error policy, shareable, dedicated IO thread, custom block size, tag.
func (g *gen) diskOptions(d *v1.Disk, dp *field.Path, kind string, bus v1.DiskBus, qcow2 bool) {
	if g.p(0.2) {
		switch {
		case kind == "disk":
			d.Serial = pick(g, "SERIAL-"+d.Name, "0123456789", "vmigen.disk_1+a")
		case g.p(0.5):
			d.Serial = "SERIAL-" + d.Name // left out, as KubeVirt leaves it
		}
	}
	if g.p(0.2) {
		d.BootOrder = g.bootOrder()
	}
	if g.p(0.15) {
		d.Cache = pick(g, v1.CacheNone, v1.CacheWriteThrough, v1.CacheWriteBack)
	}
	if g.p(0.1) {
		d.IO = pick(g, v1.IONative, v1.IOThreads)
		if d.IO == v1.IONative && d.Cache != v1.CacheNone {
			d.Cache = pick(g, v1.CacheNone, "") // api refuses the others
		}
	}
	if g.p(0.1) {
		d.ErrorPolicy = ptr(pick(g, v1.DiskErrorPolicyStop, v1.DiskErrorPolicyIgnore, v1.DiskErrorPolicyReport, v1.DiskErrorPolicyEnospace))
	}
	if kind == "disk" && (d.Cache == "" || d.Cache == v1.CacheNone) && (!qcow2 || g.kv) && g.p(0.05) {
		d.Shareable = ptr(true)
		if qcow2 && !d.Disk.ReadOnly { // libvirt shares a read-only qcow2 image
			g.beyond(dp.Child("shareable"))
		}
	}
	if bus == v1.DiskBusVirtio && g.p(0.15) {
		d.DedicatedIOThread = ptr(g.p(0.7))
	}
	if kind != "cdrom" && g.p(0.1) {
		logical := pick(g, uint(512), 4096)
		if bus == v1.DiskBusSATA {
			logical = 512
		}
		physical := max(logical, pick(g, uint(512), 4096))
		bs := &v1.CustomBlockSize{Logical: logical, Physical: physical}
		if g.kv && g.p(0.3) {
			bs.DiscardGranularity = ptr(logical * uint(pick(g, 1, 2, 8)))
			g.beyondWhereLacked(dp.Child("blockSize", "custom", "discardGranularity"), convert.LackDiscardGranularity)
		}
		d.BlockSize = &v1.BlockSize{Custom: bs}
	}
	if !g.configDrive && g.p(0.05) {
		d.Tag = "tag-" + d.Name
	}
}

// filesystem adds a virtiofs filesystem over a volume KubeVirt shares
// that way (KubeVirt profile: the project refuses filesystems today).
func (g *gen) filesystem() {
	k := pick(g, volPVC, volDataVolume, volConfigMap, volSecret, volDownwardAPI, volServiceAccount)
	for _, v := range g.spec.Volumes {
		if k == volServiceAccount && v.ServiceAccount != nil {
			k = volConfigMap
		}
	}
	name := g.name("fs")
	vol := v1.Volume{Name: name}
	switch k {
	case volPVC:
		claim := g.name("claim-" + name)
		g.mapClaimFolder(claim)
		vol.PersistentVolumeClaim = &v1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}
	case volDataVolume:
		claim := g.name("claim-" + name)
		g.mapClaimFolder(claim)
		vol.DataVolume = &v1.DataVolumeSource{Name: claim}
	case volConfigMap:
		vol.ConfigMap = &v1.ConfigMapVolumeSource{LocalObjectReference: k8sv1.LocalObjectReference{Name: "cm-" + name}}
	case volSecret:
		vol.Secret = &v1.SecretVolumeSource{SecretName: "secret-" + name}
	case volDownwardAPI:
		vol.DownwardAPI = &v1.DownwardAPIVolumeSource{Fields: []k8sv1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &k8sv1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
	case volServiceAccount:
		vol.ServiceAccount = &v1.ServiceAccountVolumeSource{ServiceAccountName: "default"}
	}
	g.spec.Volumes = append(g.spec.Volumes, vol)
	devs := &g.spec.Domain.Devices
	devs.Filesystems = append(devs.Filesystems, v1.Filesystem{Name: name, Virtiofs: &v1.FilesystemVirtiofs{}})
}

// mapClaimFolder maps, in the host layout, a claim a filesystem shares to
// a folder under ClaimDir (type dir).
func (g *gen) mapClaimFolder(claim string) {
	if g.host {
		g.claims[claim] = convert.DiskSource{Type: "dir", Path: path.Join(ClaimDir, claim)}
	}
}
