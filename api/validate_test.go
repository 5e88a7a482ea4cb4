package api

import (
	"os"
	"strings"
	"testing"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
)

// base returns testdata/vmi-small.yaml after Default: a valid VMI each case
// breaks in one way.
func base(t *testing.T) *v1.VirtualMachineInstance {
	t.Helper()
	vmi, err := Decode(readTestdata(t, "vmi-small.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	Default(vmi, ClusterConfig{})
	return vmi
}

type vcase struct {
	name   string
	mutate func(vmi *v1.VirtualMachineInstance)
	want   []string // "<error type> <path>", in order
}

// Short names of field error types for the tables.
const (
	inv  = "FieldValueInvalid "
	req  = "FieldValueRequired "
	dup  = "FieldValueDuplicate "
	ns   = "FieldValueNotSupported "
	forb = "FieldValueForbidden "
	long = "FieldValueTooLong "
)

func runValidate(t *testing.T, cases []vcase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vmi := base(t)
			c.mutate(vmi)
			errs := Validate(vmi)
			var got []string
			for _, e := range errs {
				got = append(got, string(e.Type)+" "+e.Field)
			}
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("errors\n got: %q\nwant: %q\nfull: %v", got, c.want, errs)
			}
		})
	}
}

func disk(name string, bus v1.DiskBus) v1.Disk {
	return v1.Disk{Name: name, DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: bus}}}
}

func emptyDisk(name string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{Capacity: resource.MustParse("1Gi")}}}
}

// addDisk adds a disk with an emptyDisk volume of the same name.
func addDisk(vmi *v1.VirtualMachineInstance, d v1.Disk) {
	vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, d)
	vmi.Spec.Volumes = append(vmi.Spec.Volumes, emptyDisk(d.Name))
}

// TestValidateValid checks that valid VMIs (testdata, after Default) pass.
func TestValidateValid(t *testing.T) {
	for _, name := range []string{"vmi-small.yaml", "vm-server.yaml", "vmi-windows.yaml"} {
		vmi, err := Decode(readTestdata(t, name))
		if err != nil {
			t.Fatal(err)
		}
		Default(vmi, ClusterConfig{})
		if errs := Validate(vmi); len(errs) > 0 {
			t.Errorf("%s: %v", name, errs)
		}
	}
	if errs := Validate(nil); len(errs) != 1 {
		t.Errorf("nil VMI: %v", errs)
	}
}

// The rule tables below follow KubeVirt's admitters at the reference
// commit (vmi-create-admitter.go, storage/admitters/disks.go,
// network/admitter/*.go, webhooks/hyperv.go, webhooks/amd64.go); cases
// marked "ours" check this library's own rules (see the family's doc
// comment). Paths are those a user finds in their YAML.

func TestValidateMetadata(t *testing.T) {
	runValidate(t, []vcase{
		{"no name", func(v *v1.VirtualMachineInstance) { v.Name = "" }, []string{req + "metadata.name"}},
		{"name not DNS-1123", func(v *v1.VirtualMachineInstance) { v.Name = "My_VM" }, []string{inv + "metadata.name"}},
		{"name with slash (ours: becomes a path)", func(v *v1.VirtualMachineInstance) { v.Name = "../etc" }, []string{inv + "metadata.name"}},
		{"name too long", func(v *v1.VirtualMachineInstance) { v.Name = strings.Repeat("a", 254) }, []string{inv + "metadata.name"}},
		{"namespace not a label", func(v *v1.VirtualMachineInstance) { v.Namespace = "a.b" }, []string{inv + "metadata.namespace"}},
		{"bad label key", func(v *v1.VirtualMachineInstance) { v.Labels["bad key"] = "x" }, []string{inv + "metadata.labels"}},
		{"bad label value", func(v *v1.VirtualMachineInstance) { v.Labels["k"] = "a b" }, []string{inv + "metadata.labels[k]"}},
		{"bad annotation key", func(v *v1.VirtualMachineInstance) { v.Annotations["/x"] = "" }, []string{inv + "metadata.annotations"}},
		{"annotations too big", func(v *v1.VirtualMachineInstance) { v.Annotations["big"] = strings.Repeat("x", 300*1024) }, []string{long + "metadata.annotations"}},
		{"hostname not a label", func(v *v1.VirtualMachineInstance) { v.Spec.Hostname = "a.b" }, []string{inv + "spec.hostname"}},
		{"subdomain not a subdomain", func(v *v1.VirtualMachineInstance) { v.Spec.Subdomain = "A_B" }, []string{inv + "spec.subdomain"}},
		{"architecture", func(v *v1.VirtualMachineInstance) { v.Spec.Architecture = "arm64" }, []string{ns + "spec.architecture"}},
		{"machine type", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Machine.Type = "pc-i440fx-7.2" }, []string{ns + "spec.domain.machine.type"}},
		{"versioned q35 is fine", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Machine.Type = "pc-q35-7.2" }, nil},
	})
}

func TestValidateMemory(t *testing.T) {
	res := func(v *v1.VirtualMachineInstance, kind string, name k8sv1.ResourceName, q string) {
		r := &v.Spec.Domain.Resources
		l := &r.Requests
		if kind == "limits" {
			l = &r.Limits
		}
		if *l == nil {
			*l = k8sv1.ResourceList{}
		}
		(*l)[name] = resource.MustParse(q)
	}
	runValidate(t, []vcase{
		{"negative request", func(v *v1.VirtualMachineInstance) { res(v, "requests", "memory", "-1Mi") }, []string{inv + "spec.domain.resources.requests.memory"}},
		{"request below 1M", func(v *v1.VirtualMachineInstance) { res(v, "requests", "memory", "1k") }, []string{inv + "spec.domain.resources.requests.memory"}},
		{"negative limit", func(v *v1.VirtualMachineInstance) { res(v, "limits", "memory", "-1") }, []string{inv + "spec.domain.resources.limits.memory"}},
		{"request above limit", func(v *v1.VirtualMachineInstance) {
			res(v, "requests", "memory", "2Gi")
			res(v, "limits", "memory", "1Gi")
		}, []string{inv + "spec.domain.resources.requests.memory"}},
		{"no memory at all", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Memory = nil }, []string{req + "spec.domain.memory.guest"}},
		{"zero guest memory (ours)", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Memory.Guest = ptr(resource.MustParse("0")) }, []string{inv + "spec.domain.memory.guest"}},
		{"2^63 guest memory (ours)", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Memory.Guest = ptr(resource.MustParse("9223372036854775807"))
		}, []string{inv + "spec.domain.memory.guest"}},
		{"maxGuest below guest (ours)", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Memory.MaxGuest = ptr(resource.MustParse("64Mi")) }, []string{inv + "spec.domain.memory.maxGuest"}},
		{"bad hugepage size", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Memory.Hugepages = &v1.Hugepages{PageSize: "big"} }, []string{inv + "spec.domain.memory.hugepages.pageSize"}},
		{"zero hugepage size", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Memory.Hugepages = &v1.Hugepages{PageSize: "0"} }, []string{inv + "spec.domain.memory.hugepages.pageSize"}},
		{"memory below hugepage size", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Memory.Hugepages = &v1.Hugepages{PageSize: "1Gi"} }, []string{inv + "spec.domain.memory.guest"}},
		{"memory not a multiple of pages", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Memory.Guest = ptr(resource.MustParse("129Mi"))
			v.Spec.Domain.Memory.Hugepages = &v1.Hugepages{PageSize: "2Mi"}
		}, []string{inv + "spec.domain.memory.guest"}},
	})
}

func TestValidateCPU(t *testing.T) {
	res := func(v *v1.VirtualMachineInstance, req, lim string) {
		r := &v.Spec.Domain.Resources
		r.Requests, r.Limits = k8sv1.ResourceList{}, k8sv1.ResourceList{}
		if req != "" {
			r.Requests[k8sv1.ResourceCPU] = resource.MustParse(req)
		}
		if lim != "" {
			r.Limits[k8sv1.ResourceCPU] = resource.MustParse(lim)
		}
	}
	dedicated := func(v *v1.VirtualMachineInstance) { v.Spec.Domain.CPU.DedicatedCPUPlacement = true }
	runValidate(t, []vcase{
		{"negative request", func(v *v1.VirtualMachineInstance) { res(v, "-1", "") }, []string{inv + "spec.domain.resources.requests.cpu"}},
		{"negative limit", func(v *v1.VirtualMachineInstance) { res(v, "", "-1") }, []string{inv + "spec.domain.resources.limits.cpu"}},
		{"request above limit", func(v *v1.VirtualMachineInstance) { res(v, "2", "1") }, []string{inv + "spec.domain.resources.requests.cpu"}},
		{"absurd limit (ours)", func(v *v1.VirtualMachineInstance) { res(v, "", "1e6") }, []string{inv + "spec.domain.resources.limits.cpu"}},
		{"too many vCPUs (ours)", func(v *v1.VirtualMachineInstance) {
			c := v.Spec.Domain.CPU
			c.Sockets, c.Cores, c.Threads, c.MaxSockets = 16, 16, 4, 0
		}, []string{inv + "spec.domain.cpu"}},
		{"maxSockets allows too many vCPUs (ours)", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.CPU.MaxSockets = 1000 }, []string{inv + "spec.domain.cpu.maxSockets"}},
		{"sockets above maxSockets", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.CPU.Sockets = 5 }, []string{inv + "spec.domain.cpu.sockets"}},
		{"unknown feature policy", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.CPU.Features = []v1.CPUFeature{{Name: "vmx", Policy: "please"}}
		}, []string{ns + "spec.domain.cpu.features[0].policy"}},
		{"unnamed feature (ours)", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.CPU.Features = []v1.CPUFeature{{Policy: "require"}}
		}, []string{req + "spec.domain.cpu.features[0].name"}},
		{"isolateEmulatorThread without dedicated CPUs", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.CPU.IsolateEmulatorThread = true }, []string{inv + "spec.domain.cpu.isolateEmulatorThread"}},
		{"NUMA passthrough without dedicated CPUs and hugepages", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.CPU.NUMA = &v1.NUMA{GuestMappingPassthrough: &v1.NUMAGuestMappingPassthrough{}}
		}, []string{inv + "spec.domain.cpu.numa.guestMappingPassthrough", inv + "spec.domain.cpu.numa.guestMappingPassthrough"}},
		{"realtime alone", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.CPU.Realtime = &v1.Realtime{} }, []string{req + "spec.domain.cpu.dedicatedCpuPlacement", req + "spec.domain.cpu.numa.guestMappingPassthrough"}},
		{"dedicated: fractional CPUs", func(v *v1.VirtualMachineInstance) { dedicated(v); res(v, "1500m", "") }, []string{inv + "spec.domain.resources.requests.cpu", inv + "spec.domain.cpu.dedicatedCpuPlacement"}},
		{"dedicated: request and limit differ", func(v *v1.VirtualMachineInstance) {
			dedicated(v)
			res(v, "1", "2")
		}, []string{inv + "spec.domain.resources.requests.cpu"}},
		{"dedicated: CPUs do not match topology", func(v *v1.VirtualMachineInstance) { dedicated(v); res(v, "2", "2") }, []string{inv + "spec.domain.cpu.dedicatedCpuPlacement"}},
		{"dedicated: three threads", func(v *v1.VirtualMachineInstance) {
			dedicated(v)
			v.Spec.Domain.CPU.Threads = 3
		}, []string{inv + "spec.domain.cpu.threads"}},
		{"dedicated: memory request and limit differ", func(v *v1.VirtualMachineInstance) {
			dedicated(v)
			v.Spec.Domain.Resources.Requests = k8sv1.ResourceList{"memory": resource.MustParse("128Mi")}
			v.Spec.Domain.Resources.Limits = k8sv1.ResourceList{"memory": resource.MustParse("256Mi")}
		}, []string{inv + "spec.domain.resources.requests.memory"}},
		{"dedicated: fine", dedicated, nil},
	})
}

func TestValidateDisks(t *testing.T) {
	u := func(n uint) *uint { return &n }
	runValidate(t, []vcase{
		{"disk without volume", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, disk("orphan", "virtio"))
		}, []string{inv + "spec.domain.devices.disks[2].name"}},
		{"empty CD-ROM", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, v1.Disk{Name: "cd", DiskDevice: v1.DiskDevice{CDRom: &v1.CDRomTarget{Bus: "sata"}}})
		}, []string{inv + "spec.domain.devices.disks[2].name"}},
		{"volume without disk", func(v *v1.VirtualMachineInstance) { v.Spec.Volumes = append(v.Spec.Volumes, emptyDisk("extra")) }, []string{inv + "spec.volumes[2].name"}},
		{"duplicate disk name", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, disk("root", "virtio"))
		}, []string{dup + "spec.domain.devices.disks[2].name"}},
		{"disk name not a label", func(v *v1.VirtualMachineInstance) { addDisk(v, disk("Data_1", "virtio")) }, []string{inv + "spec.domain.devices.disks[2].name", inv + "spec.volumes[2].name"}},
		{"unnamed disk", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.Disks[0].Name = "" }, []string{req + "spec.domain.devices.disks[0].name", inv + "spec.volumes[0].name"}},
		{"two kinds", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks[0].CDRom = &v1.CDRomTarget{Bus: "sata"}
		}, []string{inv + "spec.domain.devices.disks[0]"}},
		{"IDE bus", func(v *v1.VirtualMachineInstance) { addDisk(v, disk("d", "ide")) }, []string{ns + "spec.domain.devices.disks[2].disk.bus"}},
		{"unknown bus", func(v *v1.VirtualMachineInstance) { addDisk(v, disk("d", "nvme")) }, []string{ns + "spec.domain.devices.disks[2].disk.bus"}},
		{"virtio CD-ROM", func(v *v1.VirtualMachineInstance) {
			addDisk(v, v1.Disk{Name: "cd", DiskDevice: v1.DiskDevice{CDRom: &v1.CDRomTarget{Bus: "virtio"}}})
		}, []string{inv + "spec.domain.devices.disks[2].cdrom.bus"}},
		{"read-only SATA disk", func(v *v1.VirtualMachineInstance) {
			d := disk("d", "sata")
			d.Disk.ReadOnly = true
			addDisk(v, d)
		}, []string{inv + "spec.domain.devices.disks[2].disk.bus"}},
		{"PCI address on SATA", func(v *v1.VirtualMachineInstance) {
			d := disk("d", "sata")
			d.Disk.PciAddress = "0000:00:05.0"
			addDisk(v, d)
		}, []string{inv + "spec.domain.devices.disks[2].disk.pciAddress"}},
		{"malformed PCI address", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.Disks[0].Disk.PciAddress = "00:05.0" }, []string{inv + "spec.domain.devices.disks[0].disk.pciAddress"}},
		{"PCI function 8", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.Disks[0].Disk.PciAddress = "0000:00:05.8" }, []string{inv + "spec.domain.devices.disks[0].disk.pciAddress"}},
		{"boot order 0", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.Disks[0].BootOrder = u(0) }, []string{inv + "spec.domain.devices.disks[0].bootOrder"}},
		{"serial with spaces", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.Disks[0].Serial = "a b" }, []string{inv + "spec.domain.devices.disks[0].serial"}},
		{"serial with XML", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.Disks[0].Serial = "<x/>" }, []string{inv + "spec.domain.devices.disks[0].serial"}},
		{"serial too long", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.Disks[0].Serial = strings.Repeat("s", 257) }, []string{long + "spec.domain.devices.disks[0].serial"}},
		{"cache mode", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.Disks[0].Cache = "unsafe" }, []string{ns + "spec.domain.devices.disks[0].cache"}},
		{"io mode", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.Disks[0].IO = "io_uring" }, []string{ns + "spec.domain.devices.disks[0].io"}},
		{"error policy", func(v *v1.VirtualMachineInstance) {
			p := v1.DiskErrorPolicy("retry")
			v.Spec.Domain.Devices.Disks[0].ErrorPolicy = &p
		}, []string{ns + "spec.domain.devices.disks[0].errorPolicy"}},
		{"tray state (ours)", func(v *v1.VirtualMachineInstance) {
			addDisk(v, v1.Disk{Name: "cd", DiskDevice: v1.DiskDevice{CDRom: &v1.CDRomTarget{Bus: "sata", Tray: "ajar"}}})
		}, []string{ns + "spec.domain.devices.disks[2].cdrom.tray"}},
		{"dedicated IO thread on SATA", func(v *v1.VirtualMachineInstance) {
			d := disk("d", "sata")
			d.DedicatedIOThread = ptr(true)
			addDisk(v, d)
		}, []string{inv + "spec.domain.devices.disks[2].dedicatedIOThread"}},
		{"block size not a power of 2", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks[0].BlockSize = &v1.BlockSize{Custom: &v1.CustomBlockSize{Logical: 512, Physical: 3000}}
		}, []string{inv + "spec.domain.devices.disks[0].blockSize.custom.physical"}},
		{"logical above physical", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks[0].BlockSize = &v1.BlockSize{Custom: &v1.CustomBlockSize{Logical: 4096, Physical: 512}}
		}, []string{inv + "spec.domain.devices.disks[0].blockSize.custom.logical"}},
		{"custom and matching block size", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks[0].BlockSize = &v1.BlockSize{Custom: &v1.CustomBlockSize{Logical: 512, Physical: 512}, MatchVolume: &v1.FeatureState{}}
		}, []string{inv + "spec.domain.devices.disks[0].blockSize"}},
		{"LUN on a container disk", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks[0].DiskDevice = v1.DiskDevice{LUN: &v1.LunTarget{Bus: "scsi"}}
		}, []string{inv + "spec.domain.devices.disks[0].lun"}},
		{"duplicate boot order across disks and interfaces", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks[0].BootOrder = u(1)
			v.Spec.Domain.Devices.Interfaces[0].BootOrder = u(1)
		}, []string{dup + "spec.domain.devices.interfaces[0].bootOrder"}},
		{"interface boot order 0", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.Interfaces[0].BootOrder = u(0) }, []string{inv + "spec.domain.devices.interfaces[0].bootOrder"}},
	})
}

func TestValidateVolumes(t *testing.T) {
	vol := func(v *v1.VirtualMachineInstance, src v1.VolumeSource) {
		v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, disk("x", "virtio"))
		v.Spec.Volumes = append(v.Spec.Volumes, v1.Volume{Name: "x", VolumeSource: src})
	}
	runValidate(t, []vcase{
		{"duplicate volume name", func(v *v1.VirtualMachineInstance) { v.Spec.Volumes = append(v.Spec.Volumes, emptyDisk("root")) }, []string{dup + "spec.volumes[2].name"}},
		{"no source", func(v *v1.VirtualMachineInstance) { vol(v, v1.VolumeSource{}) }, []string{inv + "spec.volumes[2]"}},
		{"two sources", func(v *v1.VirtualMachineInstance) {
			v.Spec.Volumes[0].EmptyDisk = &v1.EmptyDiskSource{Capacity: resource.MustParse("1Gi")}
		}, []string{inv + "spec.volumes[0]"}},
		{"container disk without image", func(v *v1.VirtualMachineInstance) { v.Spec.Volumes[0].ContainerDisk.Image = "" }, []string{req + "spec.volumes[0].containerDisk.image"}},
		{"container disk image with newline (ours)", func(v *v1.VirtualMachineInstance) { v.Spec.Volumes[0].ContainerDisk.Image = "a\nb" }, []string{inv + "spec.volumes[0].containerDisk.image"}},
		{"container disk relative path", func(v *v1.VirtualMachineInstance) { v.Spec.Volumes[0].ContainerDisk.Path = "disk/img" }, []string{inv + "spec.volumes[0].containerDisk.path"}},
		{"container disk path with ..", func(v *v1.VirtualMachineInstance) { v.Spec.Volumes[0].ContainerDisk.Path = "/disk/../../etc/shadow" }, []string{inv + "spec.volumes[0].containerDisk.path"}},
		{"container disk path /", func(v *v1.VirtualMachineInstance) { v.Spec.Volumes[0].ContainerDisk.Path = "/" }, []string{inv + "spec.volumes[0].containerDisk.path"}},
		{"PVC without claim name", func(v *v1.VirtualMachineInstance) {
			vol(v, v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{}})
		}, []string{req + "spec.volumes[2].persistentVolumeClaim.claimName"}},
		{"PVC name that is a path (ours)", func(v *v1.VirtualMachineInstance) {
			vol(v, v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{PersistentVolumeClaimVolumeSource: k8sv1.PersistentVolumeClaimVolumeSource{ClaimName: "../../x"}}})
		}, []string{inv + "spec.volumes[2].persistentVolumeClaim.claimName"}},
		{"DataVolume without name", func(v *v1.VirtualMachineInstance) { vol(v, v1.VolumeSource{DataVolume: &v1.DataVolumeSource{}}) }, []string{req + "spec.volumes[2].dataVolume.name"}},
		{"ConfigMap without name", func(v *v1.VirtualMachineInstance) { vol(v, v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}) }, []string{req + "spec.volumes[2].configMap.name"}},
		{"Secret without name", func(v *v1.VirtualMachineInstance) { vol(v, v1.VolumeSource{Secret: &v1.SecretVolumeSource{}}) }, []string{req + "spec.volumes[2].secret.secretName"}},
		{"Secret name with slash (ours)", func(v *v1.VirtualMachineInstance) {
			vol(v, v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "a/b"}})
		}, []string{inv + "spec.volumes[2].secret.secretName"}},
		{"service account without name", func(v *v1.VirtualMachineInstance) {
			vol(v, v1.VolumeSource{ServiceAccount: &v1.ServiceAccountVolumeSource{}})
		}, []string{req + "spec.volumes[2].serviceAccount.serviceAccountName"}},
		{"two service account volumes", func(v *v1.VirtualMachineInstance) {
			for _, n := range []string{"s1", "s2"} {
				v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, disk(n, "virtio"))
				v.Spec.Volumes = append(v.Spec.Volumes, v1.Volume{Name: n, VolumeSource: v1.VolumeSource{ServiceAccount: &v1.ServiceAccountVolumeSource{ServiceAccountName: "sa"}}})
			}
		}, []string{inv + "spec.volumes"}},
		{"empty disk of zero size (ours)", func(v *v1.VirtualMachineInstance) {
			vol(v, v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{}})
		}, []string{inv + "spec.volumes[2].emptyDisk.capacity"}},
		{"host disk without path and type", func(v *v1.VirtualMachineInstance) { vol(v, v1.VolumeSource{HostDisk: &v1.HostDisk{}}) }, []string{req + "spec.volumes[2].hostDisk.path", ns + "spec.volumes[2].hostDisk.type"}},
		{"host disk relative path (ours)", func(v *v1.VirtualMachineInstance) {
			vol(v, v1.VolumeSource{HostDisk: &v1.HostDisk{Path: "data/disk.img", Type: v1.HostDiskExists}})
		}, []string{inv + "spec.volumes[2].hostDisk.path"}},
		{"host disk path with .. (ours)", func(v *v1.VirtualMachineInstance) {
			vol(v, v1.VolumeSource{HostDisk: &v1.HostDisk{Path: "/data/../etc/passwd", Type: v1.HostDiskExists}})
		}, []string{inv + "spec.volumes[2].hostDisk.path"}},
		{"host disk capacity with type Disk", func(v *v1.VirtualMachineInstance) {
			vol(v, v1.VolumeSource{HostDisk: &v1.HostDisk{Path: "/d.img", Type: v1.HostDiskExists, Capacity: resource.MustParse("1Gi")}})
		}, []string{inv + "spec.volumes[2].hostDisk.capacity"}},
		{"ephemeral without claim", func(v *v1.VirtualMachineInstance) { vol(v, v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}) }, []string{req + "spec.volumes[2].ephemeral.persistentVolumeClaim"}},
		{"sysprep without source", func(v *v1.VirtualMachineInstance) { vol(v, v1.VolumeSource{Sysprep: &v1.SysprepSource{}}) }, []string{req + "spec.volumes[2].sysprep"}},
		{"utility volumes at creation", func(v *v1.VirtualMachineInstance) { v.Spec.UtilityVolumes = []v1.UtilityVolume{} }, []string{forb + "spec.utilityVolumes"}},
		{"containerPath on a disk", func(v *v1.VirtualMachineInstance) {
			vol(v, v1.VolumeSource{ContainerPath: &v1.ContainerPathVolumeSource{Path: "/var/run/kubevirt/x"}})
		}, []string{inv + "spec.volumes[2].containerPath", inv + "spec.volumes[2].containerPath", inv + "spec.volumes[2].containerPath.path"}},
	})
}

func TestValidateCloudInit(t *testing.T) {
	ci := func(v *v1.VirtualMachineInstance) *v1.CloudInitNoCloudSource {
		return v.Spec.Volumes[1].CloudInitNoCloud
	}
	configDrive := func(v *v1.VirtualMachineInstance, s v1.CloudInitConfigDriveSource) {
		v.Spec.Volumes[1].CloudInitNoCloud = nil
		v.Spec.Volumes[1].CloudInitConfigDrive = &s
	}
	runValidate(t, []vcase{
		{"no data", func(v *v1.VirtualMachineInstance) { ci(v).UserData = "" }, []string{req + "spec.volumes[1].cloudInitNoCloud"}},
		{"userData and userDataBase64", func(v *v1.VirtualMachineInstance) { ci(v).UserDataBase64 = "I2Nsb3VkLWNvbmZpZwo=" }, []string{inv + "spec.volumes[1].cloudInitNoCloud"}},
		{"userData and secretRef", func(v *v1.VirtualMachineInstance) { ci(v).UserDataSecretRef = &k8sv1.LocalObjectReference{Name: "s"} }, []string{inv + "spec.volumes[1].cloudInitNoCloud"}},
		{"bad base64", func(v *v1.VirtualMachineInstance) {
			ci(v).UserData = ""
			ci(v).UserDataBase64 = "not base64!"
		}, []string{inv + "spec.volumes[1].cloudInitNoCloud.userDataBase64"}},
		{"userData over 2KiB", func(v *v1.VirtualMachineInstance) { ci(v).UserData = strings.Repeat("x", 2049) }, []string{long + "spec.volumes[1].cloudInitNoCloud.userData"}},
		{"userData of exactly 2KiB", func(v *v1.VirtualMachineInstance) { ci(v).UserData = strings.Repeat("x", 2048) }, nil},
		{"networkData twice", func(v *v1.VirtualMachineInstance) {
			ci(v).NetworkData = "version: 2"
			ci(v).NetworkDataSecretRef = &k8sv1.LocalObjectReference{Name: "n"}
		}, []string{inv + "spec.volumes[1].cloudInitNoCloud"}},
		{"networkData over 2KiB", func(v *v1.VirtualMachineInstance) { ci(v).NetworkData = strings.Repeat("n", 2049) }, []string{long + "spec.volumes[1].cloudInitNoCloud.networkData"}},
		{"secret name that is a path (ours)", func(v *v1.VirtualMachineInstance) {
			ci(v).UserData = ""
			ci(v).UserDataSecretRef = &k8sv1.LocalObjectReference{Name: "../x"}
		}, []string{inv + "spec.volumes[1].cloudInitNoCloud.secretRef.name"}},
		{"config drive without data", func(v *v1.VirtualMachineInstance) { configDrive(v, v1.CloudInitConfigDriveSource{}) }, []string{req + "spec.volumes[1].cloudInitConfigDrive"}},
		{"config drive networkData only", func(v *v1.VirtualMachineInstance) {
			configDrive(v, v1.CloudInitConfigDriveSource{NetworkData: "version: 2"})
		}, nil},
	})
}

func TestValidateNetwork(t *testing.T) {
	iface := func(v *v1.VirtualMachineInstance) *v1.Interface { return &v.Spec.Domain.Devices.Interfaces[0] }
	multus := func(v *v1.VirtualMachineInstance, name string, def bool) {
		v.Spec.Networks = append(v.Spec.Networks, v1.Network{Name: name, NetworkSource: v1.NetworkSource{Multus: &v1.MultusNetwork{NetworkName: "nad", Default: def}}})
		v.Spec.Domain.Devices.Interfaces = append(v.Spec.Domain.Devices.Interfaces, v1.Interface{Name: name, InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}})
	}
	runValidate(t, []vcase{
		{"interface without network", func(v *v1.VirtualMachineInstance) { v.Spec.Networks = nil }, []string{inv + "spec.domain.devices.interfaces[0].name"}},
		{"network without interface", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.Interfaces = nil }, []string{inv + "spec.networks[0].name"}},
		{"duplicate network", func(v *v1.VirtualMachineInstance) { v.Spec.Networks = append(v.Spec.Networks, v.Spec.Networks[0]) }, []string{dup + "spec.networks[1].name", inv + "spec.networks"}},
		{"duplicate interface", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Interfaces = append(v.Spec.Domain.Devices.Interfaces, *iface(v))
		}, []string{dup + "spec.domain.devices.interfaces[1].name"}},
		{"network without source", func(v *v1.VirtualMachineInstance) { v.Spec.Networks[0].Pod = nil }, []string{req + "spec.networks[0]"}},
		{"network with two sources", func(v *v1.VirtualMachineInstance) { v.Spec.Networks[0].Multus = &v1.MultusNetwork{NetworkName: "x"} }, []string{inv + "spec.networks[0]"}},
		{"multus without networkName", func(v *v1.VirtualMachineInstance) {
			multus(v, "m", false)
			v.Spec.Networks[1].Multus.NetworkName = ""
		}, []string{req + "spec.networks[1].multus.networkName"}},
		{"pod and multus default", func(v *v1.VirtualMachineInstance) { multus(v, "m", true) }, []string{inv + "spec.networks"}},
		{"multus secondary fine", func(v *v1.VirtualMachineInstance) { multus(v, "m", false) }, nil},
		{"interface name syntax", func(v *v1.VirtualMachineInstance) {
			iface(v).Name = "de fault"
			v.Spec.Networks[0].Name = "de fault"
		}, []string{inv + "spec.domain.devices.interfaces[0].name"}},
		{"no binding", func(v *v1.VirtualMachineInstance) { iface(v).Bridge = nil }, []string{inv + "spec.domain.devices.interfaces[0]"}},
		{"two bindings", func(v *v1.VirtualMachineInstance) { iface(v).Masquerade = &v1.InterfaceMasquerade{} }, []string{inv + "spec.domain.devices.interfaces[0]"}},
		{"slirp discontinued", func(v *v1.VirtualMachineInstance) {
			iface(v).Bridge = nil
			iface(v).DeprecatedSlirp = &v1.DeprecatedInterfaceSlirp{}
		}, []string{forb + "spec.domain.devices.interfaces[0].slirp"}}, // the discontinued binding is its only error
		{"masquerade on multus", func(v *v1.VirtualMachineInstance) {
			multus(v, "m", false)
			v.Spec.Domain.Devices.Interfaces[1].InterfaceBindingMethod = v1.InterfaceBindingMethod{Masquerade: &v1.InterfaceMasquerade{}}
		}, []string{inv + "spec.domain.devices.interfaces[1].masquerade"}},
		{"masquerade with the bridge MAC", func(v *v1.VirtualMachineInstance) {
			iface(v).InterfaceBindingMethod = v1.InterfaceBindingMethod{Masquerade: &v1.InterfaceMasquerade{}}
			iface(v).MacAddress = "02:00:00:00:00:00"
		}, []string{inv + "spec.domain.devices.interfaces[0].macAddress"}},
		{"model", func(v *v1.VirtualMachineInstance) { iface(v).Model = "vmxnet3" }, []string{ns + "spec.domain.devices.interfaces[0].model"}},
		{"malformed MAC", func(v *v1.VirtualMachineInstance) { iface(v).MacAddress = "02:00:00:00:00" }, []string{inv + "spec.domain.devices.interfaces[0].macAddress"}},
		{"EUI-64 MAC", func(v *v1.VirtualMachineInstance) { iface(v).MacAddress = "02:00:00:00:00:00:00:01" }, []string{inv + "spec.domain.devices.interfaces[0].macAddress"}},
		{"dashed MAC is fine", func(v *v1.VirtualMachineInstance) { iface(v).MacAddress = "02-00-00-12-34-56" }, nil},
		{"multicast MAC", func(v *v1.VirtualMachineInstance) { iface(v).MacAddress = "01:00:5e:00:00:01" }, []string{inv + "spec.domain.devices.interfaces[0].macAddress"}},
		{"malformed PCI address", func(v *v1.VirtualMachineInstance) { iface(v).PciAddress = "0000:00:1g.0" }, []string{inv + "spec.domain.devices.interfaces[0].pciAddress"}},
		{"unknown state", func(v *v1.VirtualMachineInstance) { iface(v).State = "sleeping" }, []string{ns + "spec.domain.devices.interfaces[0].state"}},
		{"absent on the default network", func(v *v1.VirtualMachineInstance) { iface(v).State = v1.InterfaceStateAbsent }, []string{inv + "spec.domain.devices.interfaces[0].state"}},
		{"port 0 and bad protocol", func(v *v1.VirtualMachineInstance) { iface(v).Ports = []v1.Port{{Protocol: "SCTP"}} }, []string{req + "spec.domain.devices.interfaces[0].ports[0].port", ns + "spec.domain.devices.interfaces[0].ports[0].protocol"}},
		{"port out of range", func(v *v1.VirtualMachineInstance) { iface(v).Ports = []v1.Port{{Port: 70000}} }, []string{inv + "spec.domain.devices.interfaces[0].ports[0].port"}},
		{"duplicate port names", func(v *v1.VirtualMachineInstance) {
			iface(v).Ports = []v1.Port{{Name: "http", Port: 80}, {Name: "http", Port: 8080}}
		}, []string{dup + "spec.domain.devices.interfaces[0].ports[1].name"}},
		{"DHCP private option out of range", func(v *v1.VirtualMachineInstance) {
			iface(v).DHCPOptions = &v1.DHCPOptions{PrivateOptions: []v1.DHCPPrivateOptions{{Option: 200, Value: "x"}}}
		}, []string{inv + "spec.domain.devices.interfaces[0].dhcpOptions.privateOptions[0].option"}},
		{"DHCP NTP server not IPv4", func(v *v1.VirtualMachineInstance) {
			iface(v).DHCPOptions = &v1.DHCPOptions{NTPServers: []string{"::1"}}
		}, []string{inv + "spec.domain.devices.interfaces[0].dhcpOptions.ntpServers[0]"}},
	})
}

func TestValidateFirmwareAndFeatures(t *testing.T) {
	efi := func(v *v1.VirtualMachineInstance, secure bool) {
		v.Spec.Domain.Firmware.Bootloader = &v1.Bootloader{EFI: &v1.EFI{SecureBoot: &secure}}
	}
	hv := func(v *v1.VirtualMachineInstance, h v1.FeatureHyperv) { v.Spec.Domain.Features.Hyperv = &h }
	on, off := &v1.FeatureState{Enabled: ptr(true)}, &v1.FeatureState{Enabled: ptr(false)}
	runValidate(t, []vcase{
		{"uuid syntax (ours)", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Firmware.UUID = "not-a-uuid" }, []string{inv + "spec.domain.firmware.uuid"}},
		{"EFI and BIOS", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Firmware.Bootloader = &v1.Bootloader{EFI: &v1.EFI{SecureBoot: ptr(false)}, BIOS: &v1.BIOS{}}
		}, []string{inv + "spec.domain.firmware.bootloader"}},
		{"secure boot without SMM", func(v *v1.VirtualMachineInstance) { efi(v, true) }, []string{inv + "spec.domain.firmware.bootloader.efi.secureBoot"}},
		{"secure boot with SMM", func(v *v1.VirtualMachineInstance) {
			efi(v, true)
			v.Spec.Domain.Features.SMM = on
		}, nil},
		{"secure boot with SMM off", func(v *v1.VirtualMachineInstance) {
			efi(v, true)
			v.Spec.Domain.Features.SMM = off
		}, []string{inv + "spec.domain.firmware.bootloader.efi.secureBoot"}},
		{"kernel args without kernel", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Firmware.KernelBoot = &v1.KernelBoot{KernelArgs: "console=ttyS0"}
		}, []string{inv + "spec.domain.firmware.kernelBoot.kernelArgs"}},
		{"kernel boot container without image and paths", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Firmware.KernelBoot = &v1.KernelBoot{Container: &v1.KernelBootContainer{}}
		}, []string{req + "spec.domain.firmware.kernelBoot.container.image", req + "spec.domain.firmware.kernelBoot.container"}},
		{"kernel path with ..", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Firmware.KernelBoot = &v1.KernelBoot{Container: &v1.KernelBootContainer{Image: "k", KernelPath: "/boot/../../vmlinuz", InitrdPath: "initrd"}}
		}, []string{inv + "spec.domain.firmware.kernelBoot.container.kernelPath", inv + "spec.domain.firmware.kernelBoot.container.initrdPath"}},
		{"ACPI table without reference", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Firmware.ACPI = &v1.ACPI{} }, []string{req + "spec.domain.firmware.acpi"}},
		{"ACPI table from a non-secret volume", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Firmware.ACPI = &v1.ACPI{SlicNameRef: "root"} }, []string{inv + "spec.domain.firmware.acpi.slicNameRef"}},
		{"ACPI table from no volume", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Firmware.ACPI = &v1.ACPI{MsdmNameRef: "nope"} }, []string{inv + "spec.domain.firmware.acpi.msdmNameRef"}},
		{"SEV without EFI", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.LaunchSecurity = &v1.LaunchSecurity{SEV: &v1.SEV{}} }, []string{inv + "spec.domain.launchSecurity"}},
		{"SEV with secure boot", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.LaunchSecurity = &v1.LaunchSecurity{SEV: &v1.SEV{}}
			efi(v, true)
			v.Spec.Domain.Features.SMM = on
		}, []string{inv + "spec.domain.firmware.bootloader.efi.secureBoot"}},
		{"two launch security kinds", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.LaunchSecurity = &v1.LaunchSecurity{SEV: &v1.SEV{}, TDX: &v1.TDX{}}
		}, []string{inv + "spec.domain.launchSecurity"}},
		{"Hyper-V requirement disabled", func(v *v1.VirtualMachineInstance) { hv(v, v1.FeatureHyperv{SyNIC: on, VPIndex: off}) }, []string{inv + "spec.domain.features.hyperv.synic"}},
		{"Hyper-V requirement missing (no Default)", func(v *v1.VirtualMachineInstance) { hv(v, v1.FeatureHyperv{IPI: on}) }, []string{inv + "spec.domain.features.hyperv.ipi"}},
		{"Hyper-V fine", func(v *v1.VirtualMachineInstance) { hv(v, v1.FeatureHyperv{IPI: on, VPIndex: &v1.FeatureState{}}) }, nil},
		{"evmcs without vmx", func(v *v1.VirtualMachineInstance) { hv(v, v1.FeatureHyperv{EVMCS: on, VAPIC: on}) }, []string{req + "spec.domain.cpu.features"}},
		{"evmcs with optional vmx", func(v *v1.VirtualMachineInstance) {
			hv(v, v1.FeatureHyperv{EVMCS: on, VAPIC: on})
			v.Spec.Domain.CPU.Features = []v1.CPUFeature{{Name: "vmx", Policy: "optional"}}
		}, []string{inv + "spec.domain.cpu.features[0].policy"}},
		{"hyperv and passthrough", func(v *v1.VirtualMachineInstance) {
			hv(v, v1.FeatureHyperv{Relaxed: on})
			v.Spec.Domain.Features.HypervPassthrough = &v1.HyperVPassthrough{}
		}, []string{inv + "spec.domain.features.hyperv"}},
	})
}

func TestValidateDevicesAndLifecycle(t *testing.T) {
	devs := func(v *v1.VirtualMachineInstance) *v1.Devices { return &v.Spec.Domain.Devices }
	runValidate(t, []vcase{
		{"input bus", func(v *v1.VirtualMachineInstance) {
			devs(v).Inputs = []v1.Input{{Name: "t", Bus: "ps2", Type: "tablet"}}
		}, []string{ns + "spec.domain.devices.inputs[0].bus"}},
		{"input type", func(v *v1.VirtualMachineInstance) {
			devs(v).Inputs = []v1.Input{{Name: "t", Bus: "usb", Type: "mouse"}}
		}, []string{ns + "spec.domain.devices.inputs[0].type"}},
		{"unnamed input (ours)", func(v *v1.VirtualMachineInstance) { devs(v).Inputs = []v1.Input{{Bus: "usb", Type: "tablet"}} }, []string{req + "spec.domain.devices.inputs[0].name"}},
		{"diag288 watchdog", func(v *v1.VirtualMachineInstance) {
			devs(v).Watchdog = &v1.Watchdog{Name: "w", WatchdogDevice: v1.WatchdogDevice{Diag288: &v1.Diag288Watchdog{}}}
		}, []string{ns + "spec.domain.devices.watchdog.diag288"}},
		{"unnamed watchdog", func(v *v1.VirtualMachineInstance) {
			devs(v).Watchdog = &v1.Watchdog{WatchdogDevice: v1.WatchdogDevice{I6300ESB: &v1.I6300ESBWatchdog{Action: "reset"}}}
		}, []string{req + "spec.domain.devices.watchdog.name"}},
		{"video type", func(v *v1.VirtualMachineInstance) { devs(v).Video = &v1.VideoDevice{Type: "qxl"} }, []string{ns + "spec.domain.devices.video.type"}},
		{"video without graphics", func(v *v1.VirtualMachineInstance) {
			devs(v).Video = &v1.VideoDevice{Type: "virtio"}
			devs(v).AutoattachGraphicsDevice = ptr(false)
		}, []string{inv + "spec.domain.devices.video"}},
		{"sound", func(v *v1.VirtualMachineInstance) { devs(v).Sound = &v1.SoundDevice{Model: "sb16"} }, []string{ns + "spec.domain.devices.sound.model", req + "spec.domain.devices.sound.name"}},
		{"panic device", func(v *v1.VirtualMachineInstance) {
			m := v1.PanicDeviceModel("s390")
			devs(v).PanicDevices = []v1.PanicDevice{{Model: &m}}
		}, []string{ns + "spec.domain.devices.panicDevices[0].model"}},
		{"io threads policy", func(v *v1.VirtualMachineInstance) {
			p := v1.IOThreadsPolicy("many")
			v.Spec.Domain.IOThreadsPolicy = &p
		}, []string{ns + "spec.domain.ioThreadsPolicy"}},
		{"supplemental pool without count", func(v *v1.VirtualMachineInstance) {
			p := v1.IOThreadsPolicySupplementalPool
			v.Spec.Domain.IOThreadsPolicy = &p
		}, []string{req + "spec.domain.ioThreads.supplementalPoolThreadCount"}},
		{"start strategy", func(v *v1.VirtualMachineInstance) {
			s := v1.StartStrategy("Later")
			v.Spec.StartStrategy = &s
		}, []string{ns + "spec.startStrategy"}},
		{"paused with liveness probe", func(v *v1.VirtualMachineInstance) {
			s := v1.StartStrategyPaused
			v.Spec.StartStrategy = &s
			v.Spec.LivenessProbe = &v1.Probe{Handler: v1.Handler{GuestAgentPing: &v1.GuestAgentPing{}}}
		}, []string{inv + "spec.startStrategy"}},
		{"eviction strategy", func(v *v1.VirtualMachineInstance) {
			e := v1.EvictionStrategy("Evict")
			v.Spec.EvictionStrategy = &e
		}, []string{ns + "spec.evictionStrategy"}},
		{"probe without action", func(v *v1.VirtualMachineInstance) { v.Spec.ReadinessProbe = &v1.Probe{} }, []string{req + "spec.readinessProbe"}},
		{"probe with two actions", func(v *v1.VirtualMachineInstance) {
			v.Spec.ReadinessProbe = &v1.Probe{Handler: v1.Handler{GuestAgentPing: &v1.GuestAgentPing{}, Exec: &k8sv1.ExecAction{}}}
		}, []string{inv + "spec.readinessProbe"}},
		{"negative grace period (ours)", func(v *v1.VirtualMachineInstance) { v.Spec.TerminationGracePeriodSeconds = ptr(int64(-1)) }, []string{inv + "spec.terminationGracePeriodSeconds"}},
	})
}

// TestValidateMessages pins the wording of a few errors users will read.
func TestValidateMessages(t *testing.T) {
	vmi := base(t)
	vmi.Spec.Domain.Devices.Disks = append(vmi.Spec.Domain.Devices.Disks, disk("orphan", "virtio"))
	vmi.Spec.Volumes[1].CloudInitNoCloud.UserData = strings.Repeat("x", 3000)
	got := Validate(vmi).ToAggregate().Error()
	want := `[spec.domain.devices.disks[2].name: Invalid value: "orphan": no volume of this name in spec.volumes, ` +
		`spec.volumes[1].cloudInitNoCloud.userData: Too long: user data is 3000 bytes, more than 2048: put it in a Secret (secretRef)]`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestValidateStrings(t *testing.T) {
	tz := func(s string) *v1.Clock {
		z := v1.ClockOffsetTimezone(s)
		return &v1.Clock{ClockOffset: v1.ClockOffset{Timezone: &z}}
	}
	runValidate(t, []vcase{
		{"CPU model with XML", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.CPU.Model = `x"/><evil/>` }, []string{inv + "spec.domain.cpu.model"}},
		{"CPU feature with space", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.CPU.Features = []v1.CPUFeature{{Name: "a b", Policy: "require"}}
		}, []string{inv + "spec.domain.cpu.features[0].name"}},
		{"timezone escaping zoneinfo", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Clock = tz("../../etc/passwd") }, []string{inv + "spec.domain.clock.timezone"}},
		{"absolute timezone", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Clock = tz("/etc/localtime") }, []string{inv + "spec.domain.clock.timezone"}},
		{"timezone fine", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Clock = tz("America/Argentina/Buenos_Aires") }, nil},
		{"serial with NUL", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Firmware.Serial = "a\x00b" }, []string{inv + "spec.domain.firmware.serial"}},
		{"chassis with newline", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Chassis = &v1.Chassis{Asset: "a\nb"} }, []string{inv + "spec.domain.chassis.asset"}},
		{"long chassis serial", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Chassis = &v1.Chassis{Serial: strings.Repeat("s", 300)}
		}, []string{long + "spec.domain.chassis.serial"}},
		{"XML specials are fine in free text", func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Firmware.Serial = `<&"'>` }, nil},
	})
}

func TestValidateAccessAndProbes(t *testing.T) {
	sshKey := func(m v1.SSHPublicKeyAccessCredentialPropagationMethod, secret string) v1.AccessCredential {
		return v1.AccessCredential{SSHPublicKey: &v1.SSHPublicKeyAccessCredential{
			Source:            v1.SSHPublicKeyAccessCredentialSource{Secret: &v1.AccessCredentialSecretSource{SecretName: secret}},
			PropagationMethod: m,
		}}
	}
	runValidate(t, []vcase{
		{"ssh key by noCloud", func(v *v1.VirtualMachineInstance) {
			v.Spec.AccessCredentials = []v1.AccessCredential{sshKey(v1.SSHPublicKeyAccessCredentialPropagationMethod{NoCloud: &v1.NoCloudSSHPublicKeyAccessCredentialPropagation{}}, "keys")}
		}, nil},
		{"ssh key by configDrive without such a volume", func(v *v1.VirtualMachineInstance) {
			v.Spec.AccessCredentials = []v1.AccessCredential{sshKey(v1.SSHPublicKeyAccessCredentialPropagationMethod{ConfigDrive: &v1.ConfigDriveSSHPublicKeyAccessCredentialPropagation{}}, "keys")}
		}, []string{inv + "spec.accessCredentials[0].sshPublicKey.propagationMethod.configDrive"}},
		{"ssh key without method", func(v *v1.VirtualMachineInstance) {
			v.Spec.AccessCredentials = []v1.AccessCredential{sshKey(v1.SSHPublicKeyAccessCredentialPropagationMethod{}, "keys")}
		}, []string{inv + "spec.accessCredentials[0].sshPublicKey.propagationMethod"}},
		{"ssh key by agent without users", func(v *v1.VirtualMachineInstance) {
			v.Spec.AccessCredentials = []v1.AccessCredential{sshKey(v1.SSHPublicKeyAccessCredentialPropagationMethod{QemuGuestAgent: &v1.QemuGuestAgentSSHPublicKeyAccessCredentialPropagation{}}, "keys")}
		}, []string{req + "spec.accessCredentials[0].sshPublicKey.propagationMethod.qemuGuestAgent.users"}},
		{"ssh key secret name with slash (ours)", func(v *v1.VirtualMachineInstance) {
			v.Spec.AccessCredentials = []v1.AccessCredential{sshKey(v1.SSHPublicKeyAccessCredentialPropagationMethod{NoCloud: &v1.NoCloudSSHPublicKeyAccessCredentialPropagation{}}, "a/b")}
		}, []string{inv + "spec.accessCredentials[0].sshPublicKey.source.secret.secretName"}},
		{"empty credential", func(v *v1.VirtualMachineInstance) { v.Spec.AccessCredentials = []v1.AccessCredential{{}} }, []string{req + "spec.accessCredentials[0]"}},
		{"password without source", func(v *v1.VirtualMachineInstance) {
			v.Spec.AccessCredentials = []v1.AccessCredential{{UserPassword: &v1.UserPasswordAccessCredential{
				PropagationMethod: v1.UserPasswordAccessCredentialPropagationMethod{QemuGuestAgent: &v1.QemuGuestAgentUserPasswordAccessCredentialPropagation{}},
			}}}
		}, []string{req + "spec.accessCredentials[0].userPassword.source.secret"}},
		{"httpGet probe without pod network", func(v *v1.VirtualMachineInstance) {
			v.Spec.Networks, v.Spec.Domain.Devices.Interfaces = nil, nil
			v.Spec.ReadinessProbe = &v1.Probe{Handler: v1.Handler{HTTPGet: &k8sv1.HTTPGetAction{}}}
		}, []string{inv + "spec.readinessProbe.httpGet"}},
	})
}

func TestValidatePCIAddresses(t *testing.T) {
	diskAt := func(v *v1.VirtualMachineInstance, addr string) {
		v.Spec.Domain.Devices.Disks[0].Disk.PciAddress = addr
	}
	iface := func(v *v1.VirtualMachineInstance) *v1.Interface { return &v.Spec.Domain.Devices.Interfaces[0] }
	runValidate(t, []vcase{
		{"fine", func(v *v1.VirtualMachineInstance) { diskAt(v, "0000:00:0a.0") }, nil},
		{"bus 5 is fine", func(v *v1.VirtualMachineInstance) { diskAt(v, "0000:05:00.0") }, nil},
		{"PCI domain 1", func(v *v1.VirtualMachineInstance) { diskAt(v, "0001:00:0a.0") }, []string{inv + "spec.domain.devices.disks[0].disk.pciAddress"}},
		{"slot 0x20", func(v *v1.VirtualMachineInstance) { diskAt(v, "0000:01:20.0") }, []string{inv + "spec.domain.devices.disks[0].disk.pciAddress"}},
		{"host bridge slot", func(v *v1.VirtualMachineInstance) { diskAt(v, "0000:00:00.0") }, []string{inv + "spec.domain.devices.disks[0].disk.pciAddress"}},
		{"ICH9 slot", func(v *v1.VirtualMachineInstance) { diskAt(v, "0000:00:1F.2") }, []string{inv + "spec.domain.devices.disks[0].disk.pciAddress"}},
		{"same address twice", func(v *v1.VirtualMachineInstance) {
			diskAt(v, "0000:00:0a.0")
			iface(v).PciAddress = "0000:00:0A.0"
		}, []string{dup + "spec.domain.devices.interfaces[0].pciAddress"}},
	})
}

func TestValidateEFINeedsACPI(t *testing.T) {
	efi := func(v *v1.VirtualMachineInstance, acpi *bool) {
		v.Spec.Domain.Firmware = &v1.Firmware{Bootloader: &v1.Bootloader{EFI: &v1.EFI{SecureBoot: ptr(false)}}}
		v.Spec.Domain.Features = &v1.Features{ACPI: v1.FeatureState{Enabled: acpi}}
	}
	runValidate(t, []vcase{
		{"EFI with ACPI", func(v *v1.VirtualMachineInstance) { efi(v, nil) }, nil},
		{"EFI with ACPI enabled", func(v *v1.VirtualMachineInstance) { efi(v, ptr(true)) }, nil},
		{"EFI without ACPI", func(v *v1.VirtualMachineInstance) { efi(v, ptr(false)) }, []string{inv + "spec.domain.features.acpi.enabled"}},
		{"BIOS without ACPI", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Features = &v1.Features{ACPI: v1.FeatureState{Enabled: ptr(false)}}
		}, nil},
	})
}

func TestValidateClock(t *testing.T) {
	berlin := v1.ClockOffsetTimezone("Europe/Berlin")
	runValidate(t, []vcase{
		{"utc", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Clock = &v1.Clock{ClockOffset: v1.ClockOffset{UTC: &v1.ClockOffsetUTC{}}}
		}, nil},
		{"utc and timezone", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Clock = &v1.Clock{ClockOffset: v1.ClockOffset{UTC: &v1.ClockOffsetUTC{}, Timezone: &berlin}}
		}, []string{inv + "spec.domain.clock"}},
	})
}

// TestValidateAdmittedObject: a VMI read back from a cluster (status,
// managed fields, finalizers, the kubevirt.io/nodeName label KubeVirt sets
// when it schedules the VMI) decodes, and Validate accepts it; only
// ValidateCreate, for a VMI about to be created, refuses the label.
func TestValidateAdmittedObject(t *testing.T) {
	data, err := os.ReadFile("testdata/admitted-vmi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	vmi, err := Decode(data)
	if err != nil {
		t.Fatalf("Decode: %v", err)
	}
	if vmi.Status.Phase != v1.Running || len(vmi.ManagedFields) != 2 || vmi.Labels[v1.NodeNameLabel] != "node01" {
		t.Fatalf("decoded status %q, %d managed fields, labels %v", vmi.Status.Phase, len(vmi.ManagedFields), vmi.Labels)
	}
	Default(vmi, ClusterConfig{})
	if errs := Validate(vmi); len(errs) > 0 {
		t.Errorf("Validate refuses an admitted VMI: %v", errs)
	}
	errs := ValidateCreate(vmi)
	if len(errs) != 1 || errs[0].Field != "metadata.labels[kubevirt.io/nodeName]" || errs[0].Type != field.ErrorTypeForbidden {
		t.Errorf("ValidateCreate: %v, want one Forbidden metadata.labels[kubevirt.io/nodeName]", errs)
	}
}
