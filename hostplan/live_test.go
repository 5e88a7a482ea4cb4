package hostplan

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

// liveBase is a running VMI the live cases change: a virtio disk, a
// CD-ROM, a pod NIC and a multus NIC, one socket of four.
const liveBase = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: live, namespace: ns, uid: 6e0f5a3c-0000-4000-8000-000000000024}
spec:
  domain:
    cpu: {sockets: 1, cores: 1, threads: 1, maxSockets: 4}
    resources: {requests: {memory: 128Mi}}
    devices:
      disks:
      - {name: root, disk: {bus: virtio}}
      - {name: cd, cdrom: {bus: sata}}
      interfaces:
      - {name: default, masquerade: {}}
      - {name: blue, bridge: {}, macAddress: "02:00:00:00:00:02"}
  networks:
  - {name: default, pod: {}}
  - {name: blue, multus: {networkName: blue}}
  volumes:
  - {name: root, hostDisk: {path: /srv/disks/root.img, type: Disk}}
  - {name: cd, hostDisk: {path: /srv/disks/a.iso, type: Disk}}
`

// liveHost is testHost with hostDisks allowed under /srv/disks and the
// multus networks mapped to bridges.
func liveHost() Host {
	h := testHost()
	l := h.Options.Layout.(convert.HostLayout)
	l.HostDiskAllow = []string{"/srv/disks"}
	l.Networks = map[string]convert.InterfaceAttachment{
		"blue":  {Type: "bridge", Source: "br-blue"},
		"green": {Type: "bridge", Source: "br-green"},
	}
	h.Options.Layout = l
	return h
}

// livePlan plans the VMI of yaml, after edit changed it.
func livePlan(t *testing.T, edit func(*v1.VirtualMachineInstance)) *Plan {
	t.Helper()
	vmi := decodeVMI(t, liveBase)
	if edit != nil {
		edit(vmi)
	}
	req, err := Prepare(vmi, liveHost())
	if err != nil {
		t.Fatal(err)
	}
	p, err := Make(req, liveHost(), Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func addDisk(name string, bus v1.DiskBus) func(*v1.VirtualMachineInstance) {
	return func(v *v1.VirtualMachineInstance) {
		v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, v1.Disk{Name: name, Serial: "ser-" + name,
			DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: bus}}})
		v.Spec.Volumes = append(v.Spec.Volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{
			HostDisk: &v1.HostDisk{Path: "/srv/disks/" + name + ".img", Type: v1.HostDiskExists}}})
	}
}

// TestLiveChanges compares a running VMI's plan with the plan of a
// changed spec: the live operations, and the paths that need a restart.
func TestLiveChanges(t *testing.T) {
	two := func(v *v1.VirtualMachineInstance) {
		addDisk("extra", v1.DiskBusVirtio)(v)
		addDisk("lun", v1.DiskBusSCSI)(v)
	}
	cases := []struct {
		name    string
		edit    func(*v1.VirtualMachineInstance)
		ops     []string // LiveOp.String of each
		restart []string // field paths
		lacks   []string
		device  string // in the first op's device
		plugged []string
	}{
		{name: "unchanged"},
		{name: "virtio and scsi disks added", edit: two, plugged: []string{"extra", "lun"},
			ops:    []string{"attach-disk extra (spec.domain.devices.disks[2])", "attach-disk lun (spec.domain.devices.disks[3])"},
			device: `<serial>ser-extra</serial>`},
		{name: "sata disk added", edit: addDisk("slow", v1.DiskBusSATA),
			restart: []string{"spec.domain.devices.disks[2]"}},
		{name: "virtio disk removed", edit: func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks = v.Spec.Domain.Devices.Disks[1:]
			v.Spec.Volumes = v.Spec.Volumes[1:]
		}, ops: []string{"detach-disk root (spec.domain.devices.disks[0])"}, device: `/srv/disks/root.img`},
		{name: "cdrom removed", edit: func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks = v.Spec.Domain.Devices.Disks[:1]
			v.Spec.Volumes = v.Spec.Volumes[:1]
		}, restart: []string{"spec.domain.devices.disks[1]"}},
		{name: "cdrom media changed", edit: func(v *v1.VirtualMachineInstance) {
			v.Spec.Volumes[1].HostDisk.Path = "/srv/disks/b.iso"
		}, ops: []string{"change-media cd (spec.domain.devices.disks[1])"}, device: `/srv/disks/b.iso`},
		{name: "nic added", edit: func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Interfaces = append(v.Spec.Domain.Devices.Interfaces, v1.Interface{Name: "green",
				MacAddress: "02:00:00:00:00:03", InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}})
			v.Spec.Networks = append(v.Spec.Networks, v1.Network{Name: "green",
				NetworkSource: v1.NetworkSource{Multus: &v1.MultusNetwork{NetworkName: "green"}}})
		}, ops: []string{"attach-interface green (spec.domain.devices.interfaces[2])"}, device: `02:00:00:00:00:03`},
		{name: "nic absent", edit: func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Interfaces[1].State = v1.InterfaceStateAbsent
		}, ops: []string{"detach-interface blue (spec.domain.devices.interfaces[1].state)"}, device: `br-blue`},
		{name: "nic removed", edit: func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Interfaces = v.Spec.Domain.Devices.Interfaces[:1]
			v.Spec.Networks = v.Spec.Networks[:1]
		}, ops: []string{"detach-interface blue (spec.domain.devices.interfaces[1])"}},
		{name: "link down", edit: func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Interfaces[1].State = v1.InterfaceStateLinkDown
		}, ops: []string{"set-link blue (spec.domain.devices.interfaces[1].state)"}, device: `<link state="down">`},
		{name: "sockets 1 to 3", edit: func(v *v1.VirtualMachineInstance) { v.Spec.Domain.CPU.Sockets = 3 },
			ops: []string{"set-vcpus 3 (spec.domain.cpu.sockets)"}},
		{name: "max sockets changed", edit: func(v *v1.VirtualMachineInstance) { v.Spec.Domain.CPU.MaxSockets = 8 },
			restart: []string{"spec.domain.cpu.maxSockets"}},
		{name: "memory request changed", edit: func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Resources.Requests["memory"] = v.Spec.Domain.Resources.Requests["memory"].DeepCopy()
			q := v.Spec.Domain.Resources.Requests["memory"]
			q.Add(q)
			v.Spec.Domain.Resources.Requests["memory"] = q
		}, restart: []string{"spec.domain.memory.guest", "spec.domain.resources.requests.memory"}},
		{name: "a live change and one needing a restart", edit: func(v *v1.VirtualMachineInstance) {
			addDisk("extra", v1.DiskBusVirtio)(v)
			v.Spec.Domain.Devices.Disks[0].BootOrder = new(uint)
			*v.Spec.Domain.Devices.Disks[0].BootOrder = 1
		}, ops: []string{"attach-disk extra (spec.domain.devices.disks[2])"}, plugged: []string{"extra"},
			restart: []string{"spec.domain.devices.disks[0].bootOrder"}},
	}
	old := livePlan(t, nil)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			now := livePlan(t, c.edit)
			live, err := LiveChanges(old.Domain, &old.VMI.Spec, now, nil)
			if err != nil {
				t.Fatal(err)
			}
			var ops, restart, lacks []string
			for _, o := range live.Ops {
				ops = append(ops, o.String())
			}
			for _, e := range live.Restart {
				restart = append(restart, e.Field)
			}
			for _, e := range live.HostLacks {
				lacks = append(lacks, e.Field)
			}
			check := func(what string, got, want []string) {
				if strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("%s:\n got %q\nwant %q", what, got, want)
				}
			}
			check("ops", ops, c.ops)
			check("restart", restart, c.restart)
			check("host lacks", lacks, c.lacks)
			check("hotplugged", live.Hotplugged, c.plugged)
			if c.device != "" && !strings.Contains(live.Ops[0].Device, c.device) {
				t.Errorf("the device of %s lacks %q:\n%s", live.Ops[0], c.device, live.Ops[0].Device)
			}
			if live.Changed() != (c.ops != nil || c.restart != nil) {
				t.Errorf("Changed() = %v", live.Changed())
			}
		})
	}
}

// TestLiveChangesConverge: a domain that already has what the new spec
// adds (a launcher died after the attach, before recording it) needs no
// second attach, and one that lost what the new spec removes no detach.
func TestLiveChangesConverge(t *testing.T) {
	old := livePlan(t, nil)
	added := livePlan(t, addDisk("extra", v1.DiskBusVirtio))
	live, err := LiveChanges(added.Domain, &old.VMI.Spec, added, nil)
	if err != nil {
		t.Fatal(err)
	}
	if live.Changed() || len(live.Hotplugged) != 1 || live.Hotplugged[0] != "extra" {
		t.Errorf("attached already: %+v, want no change, extra hot-plugged", live)
	}
	live, err = LiveChanges(old.Domain, &added.VMI.Spec, old, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(live.Ops) != 0 || len(live.Restart) != 0 {
		t.Errorf("detached already: %+v", live)
	}
}

// TestLiveChangesMemoryHostFact: on a host whose libvirt refuses
// slot-less <maxMemory>, a change of the guest's memory is a host fact at
// its path, not a restart.
func TestLiveChangesMemoryHostFact(t *testing.T) {
	withGuest := func(size string) func(*v1.VirtualMachineInstance) {
		return func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Resources.Requests = nil
			g := resource.MustParse(size)
			v.Spec.Domain.Memory = &v1.Memory{Guest: &g}
		}
	}
	old, now := livePlan(t, withGuest("128Mi")), livePlan(t, withGuest("256Mi"))
	facts := &convert.HostFacts{Lacks: []convert.Lack{convert.LackSlotlessMaxMemory}}
	live, err := LiveChanges(old.Domain, &old.VMI.Spec, now, facts)
	if err != nil {
		t.Fatal(err)
	}
	if len(live.HostLacks) != 1 || live.HostLacks[0].Field != "spec.domain.memory.guest" || len(live.Ops) != 0 {
		t.Fatalf("got %+v", live)
	}
	if !strings.Contains(live.HostLacks[0].Detail, "maxMemory") || live.Applicable() {
		t.Errorf("detail %q, applicable %v", live.HostLacks[0].Detail, live.Applicable())
	}
}

// TestSpecMarkRoundTrip: the spec a plan's marks record reads back equal.
func TestSpecMarkRoundTrip(t *testing.T) {
	p := livePlan(t, nil)
	m, err := ParseMarks(p.Domain.Metadata.XML)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := m.SpecOf()
	if err != nil || spec == nil {
		t.Fatal(spec, err)
	}
	paths, err := specDiff(spec, &p.VMI.Spec)
	if err != nil || len(paths) != 0 {
		t.Errorf("differs at %v (%v)", paths, err)
	}
}

// TestSpecMarkRedactsUserData: the marks (in the domain's XML, which any
// libvirt reader sees) hold the digest of inline cloud-init user data,
// never the data; the same data compares unchanged, new data needs a
// restart at its path.
func TestSpecMarkRedactsUserData(t *testing.T) {
	const secret = "#cloud-config\npassword: hunter2-marks\n"
	withUserData := func(data string) func(*v1.VirtualMachineInstance) {
		return func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, v1.Disk{Name: "ci",
				DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: v1.DiskBusVirtio}}})
			v.Spec.Volumes = append(v.Spec.Volumes, v1.Volume{Name: "ci", VolumeSource: v1.VolumeSource{
				CloudInitNoCloud: &v1.CloudInitNoCloudSource{UserData: data}}})
		}
	}
	p := livePlan(t, withUserData(secret))
	if strings.Contains(p.Marks.Spec, "hunter2") || !strings.Contains(p.Marks.Spec, `"userData":"sha256:`) {
		t.Errorf("the spec mark shows the user data or no digest of it: %s", p.Marks.Spec)
	}
	if p.VMI.Spec.Volumes[len(p.VMI.Spec.Volumes)-1].CloudInitNoCloud.UserData != secret {
		t.Error("SpecMark changed the plan's VMI")
	}
	m, err := ParseMarks(p.Domain.Metadata.XML)
	if err != nil {
		t.Fatal(err)
	}
	was, err := m.SpecOf()
	if err != nil {
		t.Fatal(err)
	}
	if live, err := LiveChanges(p.Domain, was, p, nil); err != nil || live.Changed() || len(live.Restart) != 0 {
		t.Errorf("same user data: %+v, %v; want no change", live, err)
	}
	changed := livePlan(t, withUserData(secret+"# more\n"))
	live, err := LiveChanges(p.Domain, was, changed, nil)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, r := range live.Restart {
		paths = append(paths, r.Field)
	}
	if want := fmt.Sprintf("spec.volumes[%d].cloudInitNoCloud.userData", len(changed.VMI.Spec.Volumes)-1); !slices.Contains(paths, want) {
		t.Errorf("new user data: restart at %v, want %s", paths, want)
	}
}

// TestReserveRootPorts: a q35 domain gets KubeVirt's spare root ports
// (8 in all, at least 3 free), none with the root-complex annotation.
func TestReserveRootPorts(t *testing.T) {
	count := func(p *Plan) (ports int) {
		for _, c := range p.Domain.Devices.Controllers {
			if c.Model == "pcie-root-port" {
				ports++
			}
		}
		return ports
	}
	p := livePlan(t, nil)
	used := countPCIDevices(p.Domain.Devices) - count(p)
	if got, want := count(p), used+max(rootPortsTotal-used, rootPortsFree); got != want || got-used < rootPortsFree {
		t.Errorf("%d root ports for %d devices, want %d", got, used, want)
	}
	flat := livePlan(t, func(v *v1.VirtualMachineInstance) {
		v.Annotations = map[string]string{v1.PlacePCIDevicesOnRootComplex: "true"}
	})
	if n := count(flat); n != 0 {
		t.Errorf("%d root ports on the root complex", n)
	}
}

// liveRunningXML is a running domain with 4 of 8 vCPUs enabled (2 cores
// per socket, one thread) and a hot-plugged disk.
const liveRunningXML = `<domain type='qemu' id='7'>
  <name>ns_live</name>
  <memory unit='KiB'>131072</memory>
  <vcpu placement='static' current='4'>8</vcpu>
  <os><type arch='x86_64' machine='pc-q35-7.2'>hvm</type></os>
  <cpu mode='host-model'><topology sockets='4' dies='1' cores='2' threads='1'/></cpu>
  <devices>
    <disk type='file' device='disk'>
      <source file='/srv/vmis/ns_live/disks/extra.qcow2'/>
      <target dev='vdb' bus='virtio'/>
      <alias name='ua-extra'/>
    </disk>
  </devices>
</domain>`

// TestLiveStatus: a running domain's hot-plugged volumes are Ready in
// status.volumeStatus with hotplugVolume and their target; its enabled
// vCPUs make status.currentCPUTopology; its memory status.memory.
func TestLiveStatus(t *testing.T) {
	d, err := domain.Unmarshal([]byte(liveRunningXML))
	if err != nil {
		t.Fatal(err)
	}
	s := Snapshot{Obs: domain.Observation{Defined: true, State: domain.StateRunning, Started: true}, Domain: d,
		Marks: &Marks{Owner: "o", VMI: VMIRef{Namespace: "ns", Name: "live"}, Hotplugged: []string{"extra"}}}
	st := Status(s, v1.VirtualMachineInstanceStatus{}, v1.Running, nil, time.Now())
	if len(st.VolumeStatus) != 1 {
		t.Fatalf("volumeStatus %+v", st.VolumeStatus)
	}
	vs := st.VolumeStatus[0]
	if vs.Name != "extra" || vs.Phase != v1.VolumeReady || vs.HotplugVolume == nil || vs.Target != "vdb" {
		t.Errorf("volume status %+v", vs)
	}
	if c := st.CurrentCPUTopology; c == nil || c.Sockets != 2 || c.Cores != 2 || c.Threads != 1 {
		t.Errorf("currentCPUTopology %+v, want 2 sockets of 2 cores", c)
	}
	if m := st.Memory; m == nil || m.GuestAtBoot.String() != "128Mi" || m.GuestCurrent.String() != "128Mi" {
		t.Errorf("memory %+v", m)
	}
	s.Obs.State = domain.StateShutoff
	if off := Status(s, st, v1.Running, nil, time.Now()); off.CurrentCPUTopology != nil || off.Memory != nil {
		t.Errorf("a domain that is off: %+v, %+v", off.CurrentCPUTopology, off.Memory)
	}
}

// TestLiveChangesLibvirtSources: what libvirt adds to a running domain's
// disk sources (their index) is no change of a CD-ROM's medium.
func TestLiveChangesLibvirtSources(t *testing.T) {
	p := livePlan(t, nil)
	running, err := domain.Unmarshal(p.XML)
	if err != nil {
		t.Fatal(err)
	}
	for i := range running.Devices.Disks {
		if s := running.Devices.Disks[i].Source; s != nil {
			s.Index = uint(i + 1)
		}
	}
	live, err := LiveChanges(running, &p.VMI.Spec, p, nil)
	if err != nil || live.Changed() {
		t.Errorf("unchanged spec, libvirt's indices: %+v (%v)", live, err)
	}
}
