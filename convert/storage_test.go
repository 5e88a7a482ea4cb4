package convert

import (
	"errors"
	"strings"
	"testing"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/api"
)

// Expected values in this file were worked out by hand from KubeVirt's
// converter (storage/disk.go makeDeviceName and formatDeviceName,
// iothreads/iothreads.go GetIOThreadsCountType, storage/configurator.go
// assignDiskIOThread) and, for the pod paths, checked against
// ../shared/kubevirt-reference/domains (vmi-fedora, vmi-host-disk,
// vm-alpine-multipvc).

func TestTargetName(t *testing.T) {
	for index, want := range map[int]string{0: "sda", 1: "sdb", 25: "sdz", 26: "sdaa", 27: "sdab", 51: "sdaz", 52: "sdba", 701: "sdzz", 702: "sdaaa"} {
		if got := targetName("sd", index); got != want {
			t.Errorf("targetName(sd, %d) = %q, want %q", index, got, want)
		}
	}
}

func TestTargetNamerKeepsStatusTargets(t *testing.T) {
	vmi := &v1.VirtualMachineInstance{}
	vmi.Spec.Domain.Devices.Disks = []v1.Disk{
		{Name: "a", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusSATA}}},
		{Name: "b", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusSCSI}}},
		{Name: "c", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio}}},
		{Name: "d", DiskDevice: v1.DiskDevice{CDRom: &v1.CDRomTarget{Bus: v1.DiskBusSATA}}},
	}
	// b already runs as sda: a and d take the next free names.
	vmi.Status.VolumeStatus = []v1.VolumeStatus{{Name: "b", Target: "sda"}}
	c := newConverter(vmi, Options{})
	b := diskBuilder{parts: make([]diskParts, len(vmi.Spec.Domain.Devices.Disks))}
	type res struct {
		name string
		unit uint
	}
	got := []res{}
	for i, d := range vmi.Spec.Domain.Devices.Disks {
		c.diskTarget(&b, i, diskBus(&d))
		got = append(got, res{b.parts[i].target.Dev, b.parts[i].unit})
	}
	want := []res{{"sdb", 1}, {"sda", 0}, {"vda", 0}, {"sdc", 2}}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("disk %d: got %v, want %v", i, got[i], want[i])
		}
	}
}

func diskNamed(name string, bus v1.DiskBus, dedicated bool) v1.Disk {
	d := v1.Disk{Name: name, DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: bus}}}
	if dedicated {
		d.DedicatedIOThread = &dedicated
	}
	return d
}

func TestIOThreadPlan(t *testing.T) {
	shared, auto := v1.IOThreadsPolicyShared, v1.IOThreadsPolicyAuto
	cases := []struct {
		name      string
		policy    *v1.IOThreadsPolicy
		cpu       string
		dedicated []bool
		want      ioThreadPlan
	}{
		{"no policy, no dedicated disk", nil, "", []bool{false, false}, ioThreadPlan{}},
		{"no policy, one dedicated", nil, "", []bool{false, true, false}, ioThreadPlan{total: 2, shared: 1}},
		{"shared", &shared, "", []bool{false, false, false}, ioThreadPlan{total: 1, shared: 1}},
		{"shared, all dedicated", &shared, "", []bool{true, true}, ioThreadPlan{total: 3, shared: 1}},
		{"auto, under the limit", &auto, "2", []bool{false, false, true}, ioThreadPlan{total: 3, shared: 2}},
		{"auto, over the limit", &auto, "2", []bool{false, false, true, false, false, false}, ioThreadPlan{total: 4, shared: 3}},
		{"auto, no cpu request", &auto, "", []bool{false, false, false}, ioThreadPlan{total: 2, shared: 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			vmi := &v1.VirtualMachineInstance{}
			vmi.Spec.Domain.IOThreadsPolicy = tc.policy
			if tc.cpu != "" {
				vmi.Spec.Domain.Resources.Requests = k8sv1.ResourceList{k8sv1.ResourceCPU: resource.MustParse(tc.cpu)}
			}
			for i, ded := range tc.dedicated {
				vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, diskNamed(string(rune('a'+i)), v1.DiskBusVirtio, ded))
			}
			if got := newConverter(vmi, Options{}).facts.ioThreads; got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestIOThreadPlanRefusals(t *testing.T) {
	pool := v1.IOThreadsPolicySupplementalPool
	bogus := v1.IOThreadsPolicy("dedicated")
	three := uint32(3)
	for _, tc := range []struct {
		name    string
		policy  *v1.IOThreadsPolicy
		threads *v1.DiskIOThreads
		field   string
		// api.Validate's rules, but the supplementalPool policy, which
		// the iothreads area refuses where the host lacks the form.
		api bool
	}{
		{"pool without count", &pool, nil, "spec.domain.ioThreads.supplementalPoolThreadCount", true},
		{"pool on libvirt 9.0", &pool, &v1.DiskIOThreads{SupplementalPoolThreadCount: &three}, "spec.domain.ioThreadsPolicy", false},
		{"unknown policy", &bogus, nil, "spec.domain.ioThreadsPolicy", true},
		{"count without pool", nil, &v1.DiskIOThreads{SupplementalPoolThreadCount: &three}, "spec.domain.ioThreads", true},
	} {
		vmi := &v1.VirtualMachineInstance{}
		vmi.Spec.Domain.IOThreadsPolicy = tc.policy
		vmi.Spec.Domain.IOThreads = tc.threads
		if tc.api {
			refusedByAPI(t, vmi, tc.field, "")
			continue
		}
		c := newConverter(vmi, Options{HostFacts: HostFacts{Lacks: debian12}})
		assertField(t, tc.name, c.iothreads(&libvirtxml.Domain{}), tc.field)
	}
}

func assertField(t *testing.T, name string, err error, path string) {
	t.Helper()
	var fe *field.Error
	if !errors.As(err, &fe) {
		t.Errorf("%s: got %v, want a *field.Error on %s", name, err, path)
		return
	}
	if fe.Field != path {
		t.Errorf("%s: error on %s (%v), want %s", name, fe.Field, err, path)
	}
}

func storageVMI(volumes ...v1.Volume) *v1.VirtualMachineInstance {
	vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "vm1", Namespace: "ns1"}}
	vmi.Spec.Volumes = volumes
	return vmi
}

func TestKubeVirtLayoutVolumes(t *testing.T) {
	vmi := storageVMI(
		v1.Volume{Name: "cloudinit", VolumeSource: v1.VolumeSource{CloudInitNoCloud: &v1.CloudInitNoCloudSource{}}},
		v1.Volume{Name: "containerdisk", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: "x"}}},
		v1.Volume{Name: "host-disk", VolumeSource: v1.VolumeSource{HostDisk: &v1.HostDisk{Path: "/var/data/disk.img", Type: v1.HostDiskExistsOrCreate}}},
		v1.Volume{Name: "pvcdisk1", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: "disk-alpine"}}}},
		v1.Volume{Name: "blk", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{
			PersistentVolumeClaim: &k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: "golden"}}}},
		v1.Volume{Name: "sa", VolumeSource: v1.VolumeSource{ServiceAccount: &v1.ServiceAccountVolumeSource{ServiceAccountName: "default"}}},
	)
	l := KubeVirtLayout{BlockVolumes: []string{"blk"}}
	want := []DiskSource{
		{Type: "file", Path: "/var/run/kubevirt-ephemeral-disks/cloud-init-data/ns1/vm1/noCloud.iso", Format: "raw"},
		{Type: "file", Path: "/var/run/kubevirt-ephemeral-disks/disk-data/containerdisk/disk.qcow2", Format: "qcow2",
			BackingPath: "/var/run/kubevirt/container-disks/disk_1.img", BackingFormat: "qcow2"},
		{Type: "file", Path: "/var/run/kubevirt-private/vmi-disks/host-disk/disk.img", Format: "raw"},
		{Type: "file", Path: "/var/run/kubevirt-private/vmi-disks/pvcdisk1/disk.img", Format: "raw"},
		{Type: "file", Path: "/var/run/kubevirt-ephemeral-disks/disk-data/blk/disk.qcow2", Format: "qcow2",
			BackingPath: "/dev/blk", BackingFormat: "raw"},
		{Type: "file", Path: "/var/run/kubevirt-private/service-account-disk/service-account.iso", Format: "raw"},
	}
	for i := range want {
		got, err := l.Volume(vmi, i)
		if err != nil {
			t.Fatalf("volume %d: %v", i, err)
		}
		if got != want[i] {
			t.Errorf("volume %d:\n got %+v\nwant %+v", i, got, want[i])
		}
	}
}

func TestHostLayoutArtifacts(t *testing.T) {
	vmi := storageVMI(
		v1.Volume{Name: "root", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: "quay.io/a/b:1", Path: "disk/x.qcow2"}}},
		v1.Volume{Name: "eph", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{
			PersistentVolumeClaim: &k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: "golden"}}}},
		v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{Capacity: resource.MustParse("1Gi")}}},
		v1.Volume{Name: "ci", VolumeSource: v1.VolumeSource{CloudInitConfigDrive: &v1.CloudInitConfigDriveSource{}}},
		v1.Volume{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}},
		v1.Volume{Name: "dv", VolumeSource: v1.VolumeSource{DataVolume: &v1.DataVolumeSource{Name: "fast"}}},
		v1.Volume{Name: "hd", VolumeSource: v1.VolumeSource{HostDisk: &v1.HostDisk{Path: "/srv/x.img", Type: v1.HostDiskExistsOrCreate}}},
	)
	l := HostLayout{StateDir: "/state", ImageStore: "/images", HostDiskAllow: []string{"/srv"}, Claims: map[string]DiskSource{
		"golden": {Path: "/srv/golden.qcow2", Format: "qcow2"},
		"fast":   {Type: "block", Path: "/dev/vg/fast"},
	}}
	got, err := l.Artifacts(vmi)
	if err != nil {
		t.Fatal(err)
	}
	want := []HostArtifact{
		{Volume: "root", Index: 0, Kind: ArtifactOverlay, Path: "/state/ns1_vm1/disks/root.qcow2", Format: "qcow2",
			BackingPath: "/images/quay.io%2Fa%2Fb:1/disk/x.qcow2"},
		{Volume: "eph", Index: 1, Kind: ArtifactOverlay, Path: "/state/ns1_vm1/disks/eph.qcow2", Format: "qcow2",
			BackingPath: "/srv/golden.qcow2", BackingFormat: "qcow2"},
		{Volume: "scratch", Index: 2, Kind: ArtifactEmptyDisk, Path: "/state/ns1_vm1/disks/scratch.qcow2", Format: "qcow2"},
		{Volume: "ci", Index: 3, Kind: ArtifactConfigDrive, Path: "/state/ns1_vm1/cloud-init/configdrive.iso", Format: "raw"},
		{Volume: "cm", Index: 4, Kind: ArtifactConfigISO, Path: "/state/ns1_vm1/config/cm.iso", Format: "raw"},
		{Volume: "dv", Index: 5, Kind: ArtifactNone, Path: "/dev/vg/fast", Block: true, Format: "raw"},
		{Volume: "hd", Index: 6, Kind: ArtifactHostDisk, Path: "/srv/x.img", Format: "raw"},
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("volume %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	for i, a := range got {
		if a.Kind != ArtifactNone && a.Kind != ArtifactHostDisk && !strings.HasPrefix(a.Path, l.StateFolder(vmi)+"/") {
			t.Errorf("volume %d: %s is outside the state folder", i, a.Path)
		}
	}
}

func TestHostLayoutRefusesEscapes(t *testing.T) {
	l := HostLayout{StateDir: "/state", ImageStore: "/images"}
	// api.Validate refuses ".." in an image and a path, and the layout
	// keeps them inside the image store whatever they say.
	for _, tc := range []struct {
		name        string
		vol         v1.Volume
		field, want string
	}{
		{"image ..", v1.Volume{Name: "a", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: ".."}}},
			"spec.volumes[0].containerDisk.image", "/images/%2E./disk.img"},
		{"path ..", v1.Volume{Name: "a", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: "i", Path: "../x"}}},
			"spec.volumes[0].containerDisk.path", "/images/i/x"},
	} {
		refusedByAPI(t, storageVMI(tc.vol), tc.field, "")
		a, err := l.VolumeArtifact(storageVMI(tc.vol), 0)
		if err != nil || a.BackingPath != tc.want {
			t.Errorf("%s: backing path %q, %v; want %s", tc.name, a.BackingPath, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name  string
		vol   v1.Volume
		field string
	}{
		{"volume name with a slash", v1.Volume{Name: "../a", VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{}}},
			"spec.volumes[0].name"},
		{"relative host disk", v1.Volume{Name: "a", VolumeSource: v1.VolumeSource{HostDisk: &v1.HostDisk{Path: "x.img", Type: v1.HostDiskExists}}},
			"spec.volumes[0].hostDisk.path"},
		{"unmapped claim", v1.Volume{Name: "a", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}},
			"spec.volumes[0].persistentVolumeClaim.claimName"},
		{"sysprep", v1.Volume{Name: "a", VolumeSource: v1.VolumeSource{Sysprep: &v1.SysprepSource{}}},
			"spec.volumes[0].sysprep"},
	} {
		_, err := l.Volume(storageVMI(tc.vol), 0)
		assertField(t, tc.name, err, tc.field)
	}
	if got := l.ImageFolder(".."); got != "/images/%2E." {
		t.Errorf(`ImageFolder("..") = %q, want /images/%%2E.`, got)
	}
}

// TestDiskFields converts one VMI through the disks and controllers areas and
// checks the fields KubeVirt's converter sets.
func TestDiskFields(t *testing.T) {
	yes := true
	order := uint(3)
	policy := v1.DiskErrorPolicyIgnore
	vmi := storageVMI(
		v1.Volume{Name: "root", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: "x"}}},
		v1.Volume{Name: "iso", VolumeSource: v1.VolumeSource{CloudInitNoCloud: &v1.CloudInitNoCloudSource{}}},
	)
	vmi.Spec.Domain.Devices.BlockMultiQueue = &yes
	vmi.Spec.Domain.CPU = &v1.CPU{Sockets: 1, Cores: 3, Threads: 1}
	vmi.Spec.Domain.Devices.Disks = []v1.Disk{
		{Name: "root", Serial: "S1", BootOrder: &order, IO: v1.IONative, ErrorPolicy: &policy,
			DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio}}},
		{Name: "iso", Serial: "S2", DiskDevice: v1.DiskDevice{CDRom: &v1.CDRomTarget{Bus: v1.DiskBusSATA, Tray: v1.TrayStateClosed}}},
		{Name: "empty", DiskDevice: v1.DiskDevice{CDRom: &v1.CDRomTarget{Bus: v1.DiskBusUSB}}},
	}
	c := newConverter(vmi, Options{Layout: KubeVirtLayout{}})
	d := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{}}
	for _, area := range []func(*converter, *libvirtxml.Domain) error{(*converter).iothreads, (*converter).disks, (*converter).controllers} {
		if err := area(c, d); err != nil {
			t.Fatal(err)
		}
	}
	disks := d.Devices.Disks
	if len(disks) != 3 {
		t.Fatalf("got %d disks, want 3", len(disks))
	}
	root := disks[0]
	if root.Model != "virtio-non-transitional" || root.Serial != "S1" || root.Boot.Order != 3 ||
		root.Driver.Cache != "none" || root.Driver.IO != "native" || root.Driver.ErrorPolicy != "ignore" ||
		root.Driver.Discard != "unmap" || *root.Driver.Queues != 3 || root.Shareable != nil ||
		root.Alias.Name != "ua-root" || root.Target.Dev != "vda" || root.Driver.Type != "qcow2" {
		t.Errorf("root disk: %+v driver %+v", root, *root.Driver)
	}
	// io native without a cache gets cache none (libvirt refuses it
	// otherwise); a CD-ROM's serial is left out, as KubeVirt leaves it.
	iso := disks[1]
	if iso.Serial != "" || iso.ReadOnly == nil || iso.Driver.Discard != "" || iso.Target.Dev != "sda" || iso.Target.Tray != "closed" ||
		iso.Model != "" || iso.Driver.Queues != nil || iso.Driver.ErrorPolicy != "stop" {
		t.Errorf("cloud-init CD-ROM: %+v driver %+v", iso, *iso.Driver)
	}
	empty := disks[2]
	if empty.Source == nil || empty.Source.Block == nil || empty.Source.Block.Dev != "" || empty.Driver.Discard != "unmap" ||
		empty.Target.Dev != "sdb" || empty.ReadOnly == nil {
		t.Errorf("empty CD-ROM: %+v driver %+v", empty, *empty.Driver)
	}
	// The USB CD-ROM needs a USB controller (KubeVirt only looks at disks).
	if ctl := d.Devices.Controllers[0]; ctl.Type != "usb" || ctl.Model != "qemu-xhci" {
		t.Errorf("first controller: %+v, want usb qemu-xhci", ctl)
	}
}

// TestDiskRefusals: the rules of a disk alone are api.Validate's (as
// KubeVirt's admission has them: the SATA read-only disk at its bus); the
// converter does not check them again, and converts such a disk without
// failing. A disk without a bus never reaches it: api.Default gives it one.
func TestDiskRefusals(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name  string
		disk  v1.Disk
		field string
	}{
		{"ide", v1.Disk{Name: "v", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: "ide"}}}, "spec.domain.devices.disks[0].disk.bus"},
		{"virtio cdrom", v1.Disk{Name: "v", DiskDevice: v1.DiskDevice{CDRom: &v1.CDRomTarget{Bus: v1.DiskBusVirtio}}}, "spec.domain.devices.disks[0].cdrom.bus"},
		{"sata iothread", v1.Disk{Name: "v", DedicatedIOThread: &yes, DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusSATA}}},
			"spec.domain.devices.disks[0].dedicatedIOThread"},
		{"bad serial", v1.Disk{Name: "v", Serial: "a b", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio}}},
			"spec.domain.devices.disks[0].serial"},
		{"pci on sata", v1.Disk{Name: "v", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusSATA, PciAddress: "0000:00:05.0"}}},
			"spec.domain.devices.disks[0].disk.pciAddress"},
		{"sata lun", v1.Disk{Name: "v", DiskDevice: v1.DiskDevice{LUN: &v1.LunTarget{Bus: v1.DiskBusSATA}}}, "spec.domain.devices.disks[0].lun.bus"},
		{"sata readonly", v1.Disk{Name: "v", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusSATA, ReadOnly: true}}},
			"spec.domain.devices.disks[0].disk.bus"},
		{"unknown volume", v1.Disk{Name: "w", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio}}},
			"spec.domain.devices.disks[0].name"},
	} {
		vmi := storageVMI(v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
			PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}})
		vmi.Spec.Domain.Devices.Disks = []v1.Disk{tc.disk}
		refusedByAPI(t, vmi, tc.field, "")
		c := newConverter(vmi, Options{Layout: KubeVirtLayout{BlockVolumes: []string{"v"}}})
		d := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{}}
		if err := c.disks(d); err != nil || len(d.Devices.Disks) != 1 {
			t.Errorf("%s: without validation: %v, %d disks; want the disk converted", tc.name, err, len(d.Devices.Disks))
		}
	}
	vmi := storageVMI(v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{}}})
	vmi.Spec.Domain.Devices.Disks = []v1.Disk{{Name: "v", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{}}}}
	api.Default(vmi, api.ClusterConfig{})
	if b := vmi.Spec.Domain.Devices.Disks[0].Disk.Bus; b == "" {
		t.Error("api.Default leaves a disk without a bus")
	}
}

// TestLUNReservation checks both reservation forms: KubeVirt's pr-helper
// socket (managed="no", as storage/disk.go setReservation writes it, less the
// migration attribute that libvirt 9.0's schema does not know) and a
// libvirt-managed helper in the host layout.
func TestLUNReservation(t *testing.T) {
	vmi := storageVMI(v1.Volume{Name: "lun", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
		PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: "san"}}}})
	vmi.Spec.Domain.Devices.Disks = []v1.Disk{{Name: "lun", DiskDevice: v1.DiskDevice{LUN: &v1.LunTarget{Bus: v1.DiskBusSCSI, Reservation: true}}}}
	for _, tc := range []struct {
		layout  Layout
		managed string
		socket  string
	}{
		{KubeVirtLayout{BlockVolumes: []string{"lun"}}, "no", "/var/run/kubevirt/daemons/pr/pr-helper.sock"},
		{HostLayout{StateDir: "/s", Claims: map[string]DiskSource{"san": {Type: "block", Path: "/dev/sdx"}}}, "yes", ""},
	} {
		c := newConverter(vmi, Options{Layout: tc.layout})
		d := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{}}
		if err := c.disks(d); err != nil {
			t.Fatal(err)
		}
		disk := d.Devices.Disks[0]
		res := disk.Source.Reservations
		if disk.Device != "lun" || disk.Source.Block == nil || res == nil || res.Managed != tc.managed {
			t.Fatalf("%T: disk %+v source %+v", tc.layout, disk, disk.Source)
		}
		if got := ""; res.Source != nil {
			got = res.Source.UNIX.Path
			if got != tc.socket || res.Source.UNIX.Mode != "client" {
				t.Errorf("%T: reservation socket %+v, want %s in client mode", tc.layout, res.Source.UNIX, tc.socket)
			}
		} else if tc.socket != "" {
			t.Errorf("%T: no reservation socket, want %s", tc.layout, tc.socket)
		}
	}
}

// TestSCSIControllerIOThread follows KubeVirt's compute/controllers.go: a
// SCSI disk asking for a dedicated IO thread gives the SCSI controller the
// shared thread after the virtio disks' round-robin and one queue per vCPU.
func TestSCSIControllerIOThread(t *testing.T) {
	auto := v1.IOThreadsPolicyAuto
	vmi := storageVMI()
	vmi.Spec.Domain.IOThreadsPolicy = &auto
	vmi.Spec.Domain.Resources.Requests = k8sv1.ResourceList{k8sv1.ResourceCPU: resource.MustParse("2")}
	vmi.Spec.Domain.CPU = &v1.CPU{Sockets: 2, Cores: 1, Threads: 1}
	vmi.Spec.Domain.Devices.Disks = []v1.Disk{
		diskNamed("a", v1.DiskBusVirtio, false),
		diskNamed("b", v1.DiskBusVirtio, false),
		diskNamed("c", v1.DiskBusSCSI, true),
	}
	c := newConverter(vmi, Options{Layout: KubeVirtLayout{}})
	// limit 4, one dedicated: shared threads 1 and 2; a -> 1, b -> 2, so the
	// controller's turn comes back to 1.
	d := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{}}
	if err := c.controllers(d); err != nil {
		t.Fatal(err)
	}
	scsi := d.Devices.Controllers[1]
	if scsi.Type != "scsi" || scsi.Driver == nil || scsi.Driver.IOThread != 1 || scsi.Driver.Queues == nil || *scsi.Driver.Queues != 2 {
		t.Fatalf("scsi controller %+v driver %+v", scsi, scsi.Driver)
	}
}

// TestShareableQCOW2 checks that a shareable writable disk on a qcow2 image
// (a containerDisk's overlay) is refused at its shareable field, as
// libvirt refuses to share a writable qcow2 image at define, and that a
// read-only one converts (libvirt defines it and QEMU starts it).
func TestShareableQCOW2(t *testing.T) {
	yes := true
	vmi := storageVMI(v1.Volume{Name: "root", VolumeSource: v1.VolumeSource{ContainerDisk: &v1.ContainerDiskSource{Image: "x"}}})
	vmi.Spec.Domain.Devices.Disks = []v1.Disk{{Name: "root", Shareable: &yes, DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio}}}}
	c := newConverter(vmi, Options{Layout: KubeVirtLayout{}})
	d := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{}}
	fieldErr(t, c.disks(d), "spec.domain.devices.disks[0].shareable", "qcow2")

	vmi.Spec.Domain.Devices.Disks[0].Disk.ReadOnly = true
	c = newConverter(vmi, Options{Layout: KubeVirtLayout{}})
	d = &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{}}
	if err := c.disks(d); err != nil {
		t.Fatalf("a read-only shareable qcow2 disk: %v", err)
	}
	disk := d.Devices.Disks[0]
	if disk.Shareable == nil || disk.ReadOnly == nil || disk.Driver == nil || disk.Driver.Type != "qcow2" || disk.Driver.Cache != "none" {
		t.Fatalf("disk %+v driver %+v, want a shareable read-only qcow2 with cache none", disk, disk.Driver)
	}
}
