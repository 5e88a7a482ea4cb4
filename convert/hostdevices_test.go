package convert

import (
	"strings"
	"testing"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// The expected XML was checked by hand against KubeVirt's
// device/hostdevice/{hostdev.go,gpu,generic,sriov}: aliases gpu-, hostdevice-,
// usb-host-, sriov-; managed="no" on PCI devices; the first vGPU gets a
// display and ramfb unless a GPU sets display options; order generic, GPUs,
// SR-IOV.
func TestHostDevices(t *testing.T) {
	vmi := devVMI([]v1.Interface{
		{Name: "vf", PciAddress: "0000:00:0a.0", BootOrder: devPtr(uint(1)), InterfaceBindingMethod: v1.InterfaceBindingMethod{SRIOV: &v1.InterfaceSRIOV{}}},
	}, []v1.Network{multusNet("vf", "sriov/net")})
	devs := &vmi.Spec.Domain.Devices
	devs.GPUs = []v1.GPU{
		{Name: "vgpu1", DeviceName: "nvidia.com/GRID_T4-1Q"},
		{Name: "pgpu", DeviceName: "nvidia.com/TU104GL"},
		{Name: "vgpu2", DeviceName: "nvidia.com/GRID_T4-1Q"},
	}
	devs.HostDevices = []v1.HostDevice{
		{Name: "nvme", DeviceName: "intel.com/nvme"},
	}
	c := devConverter(vmi, func(o *Options) {
		o.HostDevices = map[string]HostDevice{
			"vgpu1": {MdevUUID: "4b20d080-1b54-4048-85b3-a6a62d165c01"},
			"pgpu":  {PCIAddress: "0000:65:00.0"},
			"vgpu2": {MdevUUID: "4b20d080-1b54-4048-85b3-a6a62d165c02"},
			"nvme":  {PCIAddress: "0000:3b:00.0"},
			"vf":    {PCIAddress: "0000:3b:02.1"},
		}
	})
	d := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{}}
	if err := c.hostDevices(d); err != nil {
		t.Fatal(err)
	}
	want := []string{
		`<hostdev mode="subsystem" type="pci" managed="no"><source><address domain="0x0000" bus="0x3b" slot="0x00" function="0x0"></address></source><alias name="ua-hostdevice-nvme"></alias></hostdev>`,
		`<hostdev mode="subsystem" type="pci" managed="no"><source><address domain="0x0000" bus="0x65" slot="0x00" function="0x0"></address></source><alias name="ua-gpu-pgpu"></alias></hostdev>`,
		`<hostdev mode="subsystem" type="mdev" model="vfio-pci" display="on" ramfb="on"><source><address uuid="4b20d080-1b54-4048-85b3-a6a62d165c01"></address></source><alias name="ua-gpu-vgpu1"></alias></hostdev>`,
		`<hostdev mode="subsystem" type="mdev" model="vfio-pci"><source><address uuid="4b20d080-1b54-4048-85b3-a6a62d165c02"></address></source><alias name="ua-gpu-vgpu2"></alias></hostdev>`,
		`<hostdev mode="subsystem" type="pci" managed="no"><source><address domain="0x0000" bus="0x3b" slot="0x02" function="0x1"></address></source><boot order="1"></boot><alias name="ua-sriov-vf"></alias><address type="pci" domain="0x0000" bus="0x00" slot="0x0a" function="0x0"></address></hostdev>`,
	}
	if len(d.Devices.Hostdevs) != len(want) {
		t.Fatalf("%d hostdevs, want %d", len(d.Devices.Hostdevs), len(want))
	}
	for i := range want {
		if got := xmlOf(t, &d.Devices.Hostdevs[i]); got != want[i] {
			t.Errorf("hostdev %d:\ngot  %s\nwant %s", i, got, want[i])
		}
	}
}

// An SR-IOV interface with a MAC becomes <interface type="hostdev"> (the
// interfaces area's), not a host device, so that libvirt programs the VF's
// MAC (KubeVirt leaves that to the SR-IOV CNI).
func TestSRIOVWithMAC(t *testing.T) {
	vmi := devVMI([]v1.Interface{
		{Name: "vf", MacAddress: "02-00-00-00-00-AA", PciAddress: "0000:00:0a.0", InterfaceBindingMethod: v1.InterfaceBindingMethod{SRIOV: &v1.InterfaceSRIOV{}}},
	}, []v1.Network{multusNet("vf", "sriov/net")})
	c := devConverter(vmi, func(o *Options) {
		o.HostDevices = map[string]HostDevice{"vf": {PCIAddress: "0000:3b:02.1"}}
	})
	d := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{}}
	for _, area := range []func(*converter, *libvirtxml.Domain) error{(*converter).interfaces, (*converter).hostDevices} {
		if err := area(c, d); err != nil {
			t.Fatal(err)
		}
	}
	if len(d.Devices.Hostdevs) != 0 || len(d.Devices.Interfaces) != 1 {
		t.Fatalf("%d hostdevs and %d interfaces, want 0 and 1", len(d.Devices.Hostdevs), len(d.Devices.Interfaces))
	}
	want := `<interface type="hostdev" managed="no"><mac address="02:00:00:00:00:aa"></mac><source><address type="pci" domain="0x0000" bus="0x3b" slot="0x02" function="0x1"></address></source><alias name="ua-sriov-vf"></alias><address type="pci" domain="0x0000" bus="0x00" slot="0x0a" function="0x0"></address></interface>`
	if got := xmlOf(t, &d.Devices.Interfaces[0]); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestGPUDisplayOptions(t *testing.T) {
	vmi := devVMI(nil, nil)
	vmi.Spec.Domain.Devices.GPUs = []v1.GPU{
		{Name: "a", DeviceName: "x", VirtualGPUOptions: &v1.VGPUOptions{Display: &v1.VGPUDisplayOptions{Enabled: devPtr(false)}}},
		{Name: "b", DeviceName: "x", VirtualGPUOptions: &v1.VGPUOptions{Display: &v1.VGPUDisplayOptions{RamFB: &v1.FeatureState{Enabled: devPtr(false)}}}},
	}
	c := devConverter(vmi, func(o *Options) {
		o.HostDevices = map[string]HostDevice{
			"a": {MdevUUID: "4b20d080-1b54-4048-85b3-a6a62d165c01"},
			"b": {MdevUUID: "4b20d080-1b54-4048-85b3-a6a62d165c02"},
		}
	})
	d := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{}}
	if err := c.hostDevices(d); err != nil {
		t.Fatal(err)
	}
	a, b := d.Devices.Hostdevs[0].SubsysMDev, d.Devices.Hostdevs[1].SubsysMDev
	if a.Display != "" || a.RamFB != "" {
		t.Errorf("display disabled: got display=%q ramfb=%q", a.Display, a.RamFB)
	}
	if b.Display != "on" || b.RamFB != "" {
		t.Errorf("ramfb disabled: got display=%q ramfb=%q, want on and none", b.Display, b.RamFB)
	}
}

func TestHostDevicesRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*v1.VirtualMachineInstance)
		opts map[string]HostDevice
		want string
	}{
		{
			name: "GPU without an entry",
			edit: func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Devices.GPUs = []v1.GPU{{Name: "gpu1", DeviceName: "nvidia.com/GP102GL_Tesla_P40"}}
			},
			want: `spec.domain.devices.gpus[0]: Invalid value: "gpu1": host device allocated by a device plugin is not available without a cluster; Options.HostDevices["gpu1"] must give its host address`,
		},
		{
			name: "DRA GPU without an entry",
			edit: func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Devices.GPUs = []v1.GPU{{Name: "g", ClaimRequest: &v1.ClaimRequest{ClaimName: devPtr("c"), RequestName: devPtr("r")}}}
			},
			want: `spec.domain.devices.gpus[0]: Invalid value: "g": host device allocated by a resource claim (DRA) is not available without a cluster; Options.HostDevices["g"] must give its host address`,
		},
		{
			name: "GPU given a USB device",
			edit: func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Devices.GPUs = []v1.GPU{{Name: "gpu1", DeviceName: "x"}}
			},
			opts: map[string]HostDevice{"gpu1": {USBVendor: "0x1234", USBProduct: "0x5678"}},
			want: `spec.domain.devices.gpus[0]: Invalid value: "gpu1": Options.HostDevices["gpu1"] gives a USB vendor and product; this device needs a PCI address or a mediated device uuid`,
		},
		{
			name: "USB host device",
			edit: func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Devices.HostDevices = []v1.HostDevice{{Name: "stick", DeviceName: "kubevirt.io/storage"}}
			},
			opts: map[string]HostDevice{"stick": {USBVendor: "0x46f4", USBProduct: "0x0001"}},
			want: `spec.domain.devices.hostDevices[0]: Invalid value: "stick": Options.HostDevices["stick"] gives a USB vendor and product; USB host devices are not supported yet`,
		},
		{
			name: "bad host PCI address",
			edit: func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Devices.HostDevices = []v1.HostDevice{{Name: "h", DeviceName: "x"}}
			},
			opts: map[string]HostDevice{"h": {PCIAddress: "3b:00.0"}},
			want: `spec.domain.devices.hostDevices[0]: Invalid value: "h": Options.HostDevices["h"]: not a PCI address of the form dddd:bb:ss.f`,
		},
		{
			name: "display on a PCI GPU",
			edit: func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Devices.GPUs = []v1.GPU{{Name: "g", DeviceName: "x", VirtualGPUOptions: &v1.VGPUOptions{Display: &v1.VGPUDisplayOptions{Enabled: devPtr(true)}}}}
			},
			opts: map[string]HostDevice{"g": {PCIAddress: "0000:65:00.0"}},
			want: `spec.domain.devices.gpus[0].virtualGPUOptions.display.enabled: Forbidden`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := devVMI(nil, nil)
			tc.edit(vmi)
			c := devConverter(vmi, func(o *Options) { o.HostDevices = tc.opts })
			d := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{}}
			err := c.hostDevices(d)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error = %v\nwant    %s", err, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error has more than one line: %q", err)
			}
		})
	}
}

func TestParsePCIAddress(t *testing.T) {
	a, err := parsePCIAddress("000A:fF:1f.7")
	if err != nil {
		t.Fatal(err)
	}
	if *a.Domain != 0xa || *a.Bus != 0xff || *a.Slot != 0x1f || *a.Function != 7 {
		t.Errorf("got %d:%d:%d.%d", *a.Domain, *a.Bus, *a.Slot, *a.Function)
	}
	for _, bad := range []string{"", "0000:00:00.8", "00:00:00.0", "0000:00:00:0", "0000:000:00.0"} {
		if _, err := parsePCIAddress(bad); err == nil {
			t.Errorf("parsePCIAddress(%q) succeeded", bad)
		}
	}
}
