package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/vmigen"
)

const (
	// bootNamespace holds the booted VMIs; it and their names are short:
	// a VMI's sockets are in a folder named after both.
	bootNamespace = "vmigen-boot"
	// bootRoot holds the launcher's state folders, where QEMU can reach.
	bootRoot = "/var/lib/vmi2libvirt/e2e"
	// bootSeed selects the specs TestBoot boots.
	bootSeed = 21
	// bootTimeout bounds one boot, from Sync to the guest's report, with
	// another beside it on two shared cores.
	bootTimeout = 3 * time.Minute
	// bootsAtOnce is how many guests boot at the same time.
	bootsAtOnce = 2
)

// bootNetworks are the multus networks of the specs, mapped to user-mode
// networking like the pod network.
var bootNetworks = []string{"boot-net-1", "boot-net-2"}

// bootCount is how many specs TestBoot boots (4 with -short).
func bootCount() int {
	if testing.Short() {
		return 4
	}
	return 10
}

// bootSpec is a VMI within what the test guest reports, and what its
// guest must report.
type bootSpec struct {
	vmi      *v1.VirtualMachineInstance
	cpus     int
	memory   int64 // bytes
	disks    []bootDisk
	cloud    *bootCloudInit
	nics     int
	macs     []string // the NICs' MACs that the spec sets
	describe string
}

// bootDisk is a data disk of a spec: an empty disk with a serial.
type bootDisk struct {
	serial string
	bus    string // virtio or scsi: the buses the kernel-boot guest drives
	size   int64
}

// bootCloudInit is a spec's cloud-init volume.
type bootCloudInit struct {
	label, file, content string
	cdrom                bool // on a SCSI CD-ROM, else a virtio disk
}

// newBootSpec draws spec i of seed: 1 to 3 vCPUs in a topology or from
// resources, 128 to 256 MiB, up to three empty disks on virtio or SCSI
// with serials and sizes, a NoCloud or ConfigDrive volume on a virtio disk
// or a SCSI CD-ROM, and no NIC, KubeVirt's default pod NIC, or up to three
// virtio NICs (the pod network and multus networks) with or without MACs.
// The guest is the kernel-boot test guest (Debian's cloud kernel), which
// has no SATA, USB storage or e1000e driver.
func newBootSpec(seed uint64, i int) bootSpec {
	r := rand.New(rand.NewPCG(seed, uint64(i)))
	pick := func(n int) int { return r.IntN(n) }
	name := fmt.Sprintf("b%d-%d", i, os.Getpid())
	vmi := &v1.VirtualMachineInstance{}
	vmi.APIVersion, vmi.Kind = v1.GroupVersion.String(), "VirtualMachineInstance"
	vmi.Name, vmi.Namespace = name, bootNamespace
	s := bootSpec{vmi: vmi}
	d := &vmi.Spec.Domain
	d.Firmware = &v1.Firmware{KernelBoot: &v1.KernelBoot{
		KernelArgs: testguest.KernelArgs + " " + testguest.ActionPowerOff,
		Container:  &v1.KernelBootContainer{Image: testguest.Ref, KernelPath: testguest.KernelPath, InitrdPath: testguest.InitrdPath},
	}}
	var desc []string

	topologies := [][3]uint32{{1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {3, 1, 1}, {1, 3, 1}}
	if pick(4) == 0 {
		n := 1 + pick(3)
		s.cpus = n
		d.Resources.Requests = k8sv1.ResourceList{k8sv1.ResourceCPU: *resource.NewQuantity(int64(n), resource.DecimalSI)}
		desc = append(desc, fmt.Sprintf("requests.cpu %d", n))
	} else {
		t := topologies[pick(len(topologies))]
		d.CPU = &v1.CPU{Sockets: t[0], Cores: t[1], Threads: t[2]}
		s.cpus = int(t[0] * t[1] * t[2])
		desc = append(desc, fmt.Sprintf("%d×%d×%d vCPUs", t[0], t[1], t[2]))
	}
	mem := []string{"128Mi", "192Mi", "256Mi"}[pick(3)]
	q := resource.MustParse(mem)
	s.memory = q.Value()
	if pick(2) == 0 {
		d.Memory = &v1.Memory{Guest: &q}
	} else {
		if d.Resources.Requests == nil {
			d.Resources.Requests = k8sv1.ResourceList{}
		}
		d.Resources.Requests[k8sv1.ResourceMemory] = q
	}
	desc = append(desc, mem)

	devs := &d.Devices
	addDisk := func(disk v1.Disk, vol v1.Volume) {
		devs.Disks = append(devs.Disks, disk)
		vmi.Spec.Volumes = append(vmi.Spec.Volumes, vol)
	}
	for j := range pick(4) {
		bd := bootDisk{
			serial: fmt.Sprintf("VG%d%c%d", i, 'A'+j, r.IntN(10000)),
			bus:    []string{"virtio", "scsi"}[pick(2)],
			size:   int64(8<<20) << pick(4),
		}
		s.disks = append(s.disks, bd)
		vol := fmt.Sprintf("data%d", j)
		addDisk(v1.Disk{Name: vol, Serial: bd.serial, DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBus(bd.bus)}}},
			v1.Volume{Name: vol, VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{Capacity: *resource.NewQuantity(bd.size, resource.BinarySI)}}})
		desc = append(desc, fmt.Sprintf("%s disk %s %dMi", bd.bus, bd.serial, bd.size>>20))
	}
	if kind := pick(3); kind > 0 {
		host := fmt.Sprintf("guest-%d-%d", i, r.IntN(1000))
		userData := "#cloud-config\nhostname: " + host + "\n"
		c := &bootCloudInit{content: "hostname: " + host, cdrom: pick(2) == 0}
		vol := v1.Volume{Name: "cloudinit"}
		if kind == 1 {
			c.label, c.file = "cidata", "user-data"
			vol.CloudInitNoCloud = &v1.CloudInitNoCloudSource{UserData: userData}
		} else {
			c.label, c.file = "config-2", "openstack/latest/user_data"
			vol.CloudInitConfigDrive = &v1.CloudInitConfigDriveSource{UserData: userData}
		}
		disk := v1.Disk{Name: "cloudinit", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio}}}
		where := "virtio disk"
		if c.cdrom {
			disk.DiskDevice = v1.DiskDevice{CDRom: &v1.CDRomTarget{Bus: v1.DiskBusSCSI}}
			where = "SCSI CD-ROM"
		}
		addDisk(disk, vol)
		s.cloud = c
		desc = append(desc, c.label+" on a "+where)
	}

	switch n := pick(5); n {
	case 0:
		devs.AutoattachPodInterface = ptr(false)
	case 1:
		s.nics = 1 // KubeVirt's default pod interface
	default:
		s.nics = n - 1
		for k := range s.nics {
			iface := v1.Interface{Name: fmt.Sprintf("nic%d", k)}
			if pick(3) > 0 {
				iface.Model = "virtio"
			}
			if pick(3) > 0 {
				iface.MacAddress = fmt.Sprintf("02:%02x:%02x:%02x:%02x:%02x", i, k, r.IntN(256), r.IntN(256), r.IntN(256))
				s.macs = append(s.macs, iface.MacAddress)
			}
			net := v1.Network{Name: iface.Name}
			if k == 0 {
				net.Pod = &v1.PodNetwork{}
				if pick(2) == 0 {
					iface.Masquerade = &v1.InterfaceMasquerade{}
				} else {
					iface.Bridge = &v1.InterfaceBridge{}
				}
			} else {
				net.Multus = &v1.MultusNetwork{NetworkName: bootNetworks[k-1]}
				iface.Bridge = &v1.InterfaceBridge{}
			}
			devs.Interfaces = append(devs.Interfaces, iface)
			vmi.Spec.Networks = append(vmi.Spec.Networks, net)
		}
	}
	desc = append(desc, fmt.Sprintf("%d NICs (%d MACs set)", s.nics, len(s.macs)))
	s.describe = strings.Join(desc, ", ")
	return s
}

func ptr[T any](v T) *T { return &v }

// check compares the guest's report with the spec.
func (s bootSpec) check(t *testing.T, r testguest.Report) {
	t.Helper()
	if r.CPUs != s.cpus {
		t.Errorf("guest sees %d CPUs, want %d", r.CPUs, s.cpus)
	}
	if kib := s.memory >> 10; r.MemTotalKiB <= kib*5/8 || r.MemTotalKiB > kib {
		t.Errorf("guest sees MemTotal %d KiB, want a little less than %d", r.MemTotalKiB, kib)
	}
	disks := 0
	for _, d := range r.Disks {
		if !d.CDROM {
			disks++
		}
	}
	wantDisks := len(s.disks)
	if s.cloud != nil && !s.cloud.cdrom {
		wantDisks++
	}
	if disks != wantDisks {
		t.Errorf("guest sees %d disks, want %d: %+v", disks, wantDisks, r.Disks)
	}
	for _, want := range s.disks {
		got := r.DiskBySerial(want.serial)
		switch {
		case got == nil:
			t.Errorf("no disk with serial %s: %+v", want.serial, r.Disks)
		case got.Bus != want.bus || got.CDROM || got.Size != want.size:
			t.Errorf("disk %s: %s, cdrom %v, %d bytes; want a %s disk of %d bytes", want.serial, got.Bus, got.CDROM, got.Size, want.bus, want.size)
		}
	}
	if c := s.cloud; c != nil {
		iso := r.ISO(c.label)
		if iso == nil {
			t.Errorf("no ISO labelled %s: %+v", c.label, r.ISOs)
		} else if !strings.Contains(string(iso.Files[c.file]), c.content) {
			t.Errorf("%s's %s is %q, want it to hold %q", c.label, c.file, iso.Files[c.file], c.content)
		}
		cdroms := 0
		for _, d := range r.Disks {
			if d.CDROM && d.Bus == "scsi" {
				cdroms++
			}
		}
		if want := map[bool]int{true: 1, false: 0}[c.cdrom]; cdroms != want {
			t.Errorf("guest sees %d SCSI CD-ROMs, want %d: %+v", cdroms, want, r.Disks)
		}
	}
	if len(r.NICs) != s.nics {
		t.Errorf("guest sees %d NICs, want %d: %+v", len(r.NICs), s.nics, r.NICs)
	}
	for _, n := range r.NICs {
		if n.Driver != "virtio_net" {
			t.Errorf("NIC %s has driver %q, want virtio_net", n.Name, n.Driver)
		}
	}
	for _, mac := range s.macs {
		if r.NICByMAC(mac) == nil {
			t.Errorf("no NIC with MAC %s: %+v", mac, r.NICs)
		}
	}
}

// TestBoot boots random specs within what the test guest reports through
// the launcher under emulation, two at a time, and checks each guest's
// report against its spec: CPUs, memory, disks with bus, serial and size,
// the cloud-init ISO's label and user data, NICs with MAC and driver.
//
//	go test ./testkit/vmigen/e2e -run TestBoot -v
func TestBoot(t *testing.T) {
	hosttest.Libvirt(t, testURI)
	hosttest.LockLibvirt(t, false)
	if _, err := testguest.Install(convert.DefaultImageStore, testguest.Options{}); err != nil {
		hosttest.Missing(t, "test guest cannot be built: %v", err)
	}
	networks := map[string]convert.InterfaceAttachment{}
	for _, n := range bootNetworks {
		networks[n] = convert.InterfaceAttachment{Type: "user"}
	}
	layout := convert.HostLayout{StateDir: hosttest.Dir(t, bootRoot, "vmigen-"), ImageStore: convert.DefaultImageStore, Networks: networks}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := launcher.New(ctx, launcher.Config{URI: testURI, Emulate: true, Owner: fmt.Sprintf("vmigen-e2e-%d", os.Getpid()), Layout: layout})
	if err != nil {
		t.Fatalf("launcher.New: %v", err)
	}
	t.Cleanup(func() { _ = l.Close() })
	slots := make(chan struct{}, bootsAtOnce)
	t.Run("group", func(t *testing.T) {
		for i := range bootCount() {
			s := newBootSpec(bootSeed, i)
			t.Run(s.vmi.Name, func(t *testing.T) {
				t.Parallel()
				slots <- struct{}{}
				defer func() { <-slots }()
				doc, _ := vmigen.YAML(s.vmi)
				t.Logf("%s: %s", s.vmi.Name, s.describe)
				start := time.Now()
				boot(t, l, layout, s.vmi)
				r, err := waitReport(layout, s.vmi, bootTimeout)
				log := serialLog(layout, s.vmi)
				if err != nil {
					t.Fatalf("%v\nVMI:\n%s\nconsole:\n%s\n%s", err, doc, log, qemuLog(s.vmi))
				}
				t.Logf("%s reported %.1fs after Sync", s.vmi.Name, time.Since(start).Seconds())
				s.check(t, r)
				if t.Failed() {
					t.Logf("VMI:\n%s\nconsole:\n%s", doc, serialLog(layout, s.vmi))
				}
			})
		}
	})
}

// boot syncs the VMI and deletes it when the test ends.
func boot(t *testing.T, l *launcher.Launcher, layout convert.HostLayout, vmi *v1.VirtualMachineInstance) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := l.Delete(ctx, vmi); err != nil {
			t.Errorf("cleanup: Delete %s: %v", vmi.Name, err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := l.Sync(ctx, vmi); err != nil {
		t.Fatalf("Sync %s: %v", vmi.Name, err)
	}
}

// serialLog returns the VMI's serial console log so far.
func serialLog(layout convert.HostLayout, vmi *v1.VirtualMachineInstance) string {
	b, _ := os.ReadFile(layout.Paths(vmi).SerialLog)
	return string(b)
}

// qemuLog returns the end of the QEMU log libvirt keeps for the VMI's
// domain, for a guest that printed nothing.
func qemuLog(vmi *v1.VirtualMachineInstance) string {
	file := "/var/log/libvirt/qemu/" + convert.DomainName(vmi) + ".log"
	b, err := os.ReadFile(file)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return file + ":\n" + strings.Join(lines[max(0, len(lines)-20):], "\n")
}

// waitReport waits for the guest's report on its serial console.
func waitReport(layout convert.HostLayout, vmi *v1.VirtualMachineInstance, timeout time.Duration) (testguest.Report, error) {
	deadline := time.Now().Add(timeout)
	for {
		text := serialLog(layout, vmi)
		if strings.Contains(text, testguest.EndMarker) {
			return testguest.ParseConsole(text)
		}
		if time.Now().After(deadline) {
			return testguest.Report{}, fmt.Errorf("%s printed no report within %s", vmi.Name, timeout)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
