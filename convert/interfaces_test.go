package convert

import (
	"encoding/xml"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/api"
)

// devConverter is a converter for the device areas' tests: the VMI as
// given (no defaults), KubeVirt's options with opts applied.
func devConverter(vmi *v1.VirtualMachineInstance, edit func(*Options)) *converter {
	opts := KubeVirtOptions()
	if edit != nil {
		edit(&opts)
	}
	return newConverter(vmi, opts)
}

// devVMI is a VMI named "testvmi" in namespace "default" with the given
// interfaces and networks.
func devVMI(ifaces []v1.Interface, nets []v1.Network) *v1.VirtualMachineInstance {
	vmi := &v1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{Name: "testvmi", Namespace: "default", UID: "11111111-2222-3333-4444-555555555555"}}
	vmi.Spec.Domain.Devices.Interfaces = ifaces
	vmi.Spec.Networks = nets
	return vmi
}

// xmlOf marshals a device for comparison with the XML written in a test.
func xmlOf(t *testing.T, v any) string {
	t.Helper()
	out, err := xml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func podNet(name string) v1.Network {
	return v1.Network{Name: name, NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}
}

func multusNet(name, nad string) v1.Network {
	return v1.Network{Name: name, NetworkSource: v1.NetworkSource{Multus: &v1.MultusNetwork{NetworkName: nad}}}
}

func devPtr[T any](v T) *T { return &v }

// The expected XML was checked by hand against KubeVirt's network
// DomainConfigurator (converter/network/configurator.go) and the tap names
// against pkg/network/link/names.go and namescheme (sha256 of the network
// name, first 11 hex digits; "network1" → a7662f44d65 as in KubeVirt's test).
func TestInterfacesKubeVirtLayout(t *testing.T) {
	for _, tc := range []struct {
		name   string
		iface  v1.Interface
		net    v1.Network
		mq     bool
		cores  uint32
		want   string
		errSub string
		// api: the rule is the VMI's alone, api.Validate's (errSub is
		// its error); the others are refusals of the converter.
		api bool
	}{
		{
			name:  "masquerade on the pod network",
			iface: v1.Interface{Name: "default", InterfaceBindingMethod: v1.InterfaceBindingMethod{Masquerade: &v1.InterfaceMasquerade{}}},
			net:   podNet("default"),
			want:  `<interface type="ethernet"><target dev="tap0" managed="no"></target><model type="virtio-non-transitional"></model><rom enabled="no"></rom><alias name="ua-default"></alias></interface>`,
		},
		{
			name: "bridge on multus, every option",
			iface: v1.Interface{Name: "network1", Model: "e1000e", InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}},
				MacAddress: "DE-AD-00-00-BE-AF", PciAddress: "0000:81:01.0", BootOrder: devPtr(uint(2)), ACPIIndex: 3, State: v1.InterfaceStateLinkDown},
			net:  multusNet("network1", "ns/nad"),
			want: `<interface type="ethernet"><mac address="de:ad:00:00:be:af"></mac><boot order="2"></boot><target dev="tapa7662f44d65" managed="no"></target><model type="e1000e"></model><link state="down"></link><acpi index="3"></acpi><alias name="ua-network1"></alias><address type="pci" domain="0x0000" bus="0x81" slot="0x01" function="0x0"></address></interface>`,
		},
		{
			name:  "multiqueue: one queue per vCPU",
			iface: v1.Interface{Name: "default", InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}},
			net:   podNet("default"),
			mq:    true,
			cores: 3,
			want:  `<interface type="ethernet"><target dev="tap0" managed="no"></target><model type="virtio-non-transitional"></model><driver name="vhost" queues="3"></driver><rom enabled="no"></rom><alias name="ua-default"></alias></interface>`,
		},
		{
			name:  "multiqueue on a non-virtio model has no driver",
			iface: v1.Interface{Name: "default", Model: "rtl8139", InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}},
			net:   podNet("default"),
			mq:    true,
			cores: 3,
			want:  `<interface type="ethernet"><target dev="tap0" managed="no"></target><model type="rtl8139"></model><rom enabled="no"></rom><alias name="ua-default"></alias></interface>`,
		},
		{
			name:   "unknown model",
			iface:  v1.Interface{Name: "default", Model: "virtio-net", InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}},
			net:    podNet("default"),
			errSub: `spec.domain.devices.interfaces[0].model: Unsupported value: "virtio-net"`,
			api:    true,
		},
		{
			name:   "binding plugin",
			iface:  v1.Interface{Name: "default", Binding: &v1.PluginBinding{Name: "passt"}},
			net:    podNet("default"),
			errSub: `spec.domain.devices.interfaces[0].binding: Forbidden`,
		},
		{
			name:   "passt binding",
			iface:  v1.Interface{Name: "default", InterfaceBindingMethod: v1.InterfaceBindingMethod{PasstBinding: &v1.InterfacePasstBinding{}}},
			net:    podNet("default"),
			errSub: `spec.domain.devices.interfaces[0].passtBinding: Forbidden`,
		},
		{
			name:   "bad MAC",
			iface:  v1.Interface{Name: "default", MacAddress: "de:ad:00", InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}},
			net:    podNet("default"),
			errSub: `spec.domain.devices.interfaces[0].macAddress: Invalid value: "de:ad:00"`,
			api:    true,
		},
		{
			name:   "bad PCI address",
			iface:  v1.Interface{Name: "default", PciAddress: "81:01.0", InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}},
			net:    podNet("default"),
			errSub: `spec.domain.devices.interfaces[0].pciAddress: Invalid value: "81:01.0"`,
			api:    true,
		},
		{
			name:   "sriov without a host device",
			iface:  v1.Interface{Name: "vf", InterfaceBindingMethod: v1.InterfaceBindingMethod{SRIOV: &v1.InterfaceSRIOV{}}},
			net:    multusNet("vf", "sriov/net"),
			errSub: `spec.domain.devices.interfaces[0].sriov: Invalid value: "vf"`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := devVMI([]v1.Interface{tc.iface}, []v1.Network{tc.net})
			if tc.mq {
				vmi.Spec.Domain.Devices.NetworkInterfaceMultiQueue = devPtr(true)
				vmi.Spec.Domain.CPU = &v1.CPU{Cores: tc.cores, Sockets: 1, Threads: 1}
			}
			if tc.api {
				for _, fe := range api.Validate(vmi) {
					if strings.Contains(fe.Error(), tc.errSub) {
						return
					}
				}
				t.Fatalf("api.Validate gives no error containing %q: %v", tc.errSub, api.Validate(vmi))
			}
			// SR-IOV interfaces without a MAC address are host devices.
			d := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{}}
			c := devConverter(vmi, nil)
			err := c.interfaces(d)
			if err == nil {
				err = c.hostDevices(d)
			}
			if tc.errSub != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errSub) {
					t.Fatalf("error = %v, want one containing %q", err, tc.errSub)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Devices.Interfaces) != 1 {
				t.Fatalf("%d interfaces, want 1", len(d.Devices.Interfaces))
			}
			if got := xmlOf(t, &d.Devices.Interfaces[0]); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestDeviceTags(t *testing.T) {
	vmi := devVMI([]v1.Interface{{Name: "default", Tag: "mgmt", InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}}},
		[]v1.Network{podNet("default")})
	d := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{}}
	if err := devConverter(vmi, nil).interfaces(d); err != nil {
		t.Fatalf("a tag without a config drive is ignored, as in KubeVirt: %v", err)
	}
	if err := devConverter(vmi, nil).unsupported(d); err != nil {
		t.Fatalf("a tag without a config drive is ignored, as in KubeVirt: %v", err)
	}
	vmi.Spec.Volumes = []v1.Volume{{Name: "cd", VolumeSource: v1.VolumeSource{CloudInitConfigDrive: &v1.CloudInitConfigDriveSource{UserData: "#cloud-config"}}}}
	want := "spec.domain.devices.interfaces[0].tag: Forbidden: device tags in the config drive's device metadata are not written"
	if err := devConverter(vmi, nil).unsupported(d); err == nil || err.Error() != want {
		t.Fatalf("error = %v, want %s", err, want)
	}
}

func TestInterfacesAbsentAndSRIOVSkipped(t *testing.T) {
	vmi := devVMI([]v1.Interface{
		{Name: "gone", State: v1.InterfaceStateAbsent, InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}},
		{Name: "vf", InterfaceBindingMethod: v1.InterfaceBindingMethod{SRIOV: &v1.InterfaceSRIOV{}}},
		{Name: "default", InterfaceBindingMethod: v1.InterfaceBindingMethod{Masquerade: &v1.InterfaceMasquerade{}}},
	}, []v1.Network{multusNet("gone", "a"), multusNet("vf", "b"), podNet("default")})
	c := devConverter(vmi, func(o *Options) {
		o.HostDevices = map[string]HostDevice{"vf": {PCIAddress: "0000:3b:02.1"}}
	})
	d := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{}}
	if err := c.interfaces(d); err != nil {
		t.Fatal(err)
	}
	if len(d.Devices.Interfaces) != 1 || d.Devices.Interfaces[0].Alias.Name != "ua-default" {
		t.Fatalf("interfaces = %+v, want only ua-default", d.Devices.Interfaces)
	}
}

func TestHostLayoutInterface(t *testing.T) {
	for _, tc := range []struct {
		name   string
		layout HostLayout
		net    v1.Network
		iface  v1.Interface
		want   string
		errMsg string
	}{
		{
			name:  "pod network defaults to user-mode, MAC kept",
			net:   podNet("default"),
			iface: v1.Interface{Name: "default", MacAddress: "02:00:00:00:00:01", InterfaceBindingMethod: v1.InterfaceBindingMethod{Masquerade: &v1.InterfaceMasquerade{}}},
			want:  `<interface type="user"><mac address="02:00:00:00:00:01"></mac><model type="virtio-non-transitional"></model><rom enabled="no"></rom><alias name="ua-default"></alias></interface>`,
		},
		{
			name:   "pod network on passt forwards the ports",
			layout: HostLayout{PodNetwork: InterfaceAttachment{Type: "user", Backend: "passt"}},
			net:    podNet("default"),
			iface: v1.Interface{Name: "default", InterfaceBindingMethod: v1.InterfaceBindingMethod{Masquerade: &v1.InterfaceMasquerade{}},
				Ports: []v1.Port{{Port: 80}, {Port: 53, Protocol: "UDP"}}},
			want: `<interface type="user"><portForward proto="tcp"><range start="80"></range></portForward><portForward proto="udp"><range start="53"></range></portForward><model type="virtio-non-transitional"></model><backend type="passt"></backend><rom enabled="no"></rom><alias name="ua-default"></alias></interface>`,
		},
		{
			name:   "multus network mapped to a bridge",
			layout: HostLayout{Networks: map[string]InterfaceAttachment{"ns/blue": {Type: "bridge", Source: "br-blue"}}},
			net:    multusNet("blue", "ns/blue"),
			iface:  v1.Interface{Name: "blue", InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}},
			want:   `<interface type="bridge"><source bridge="br-blue"></source><model type="virtio-non-transitional"></model><rom enabled="no"></rom><alias name="ua-blue"></alias></interface>`,
		},
		{
			name:   "multus network mapped to a libvirt network",
			layout: HostLayout{Networks: map[string]InterfaceAttachment{"red": {Type: "network", Source: "default"}}},
			net:    multusNet("red", "red"),
			iface:  v1.Interface{Name: "red", InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}},
			want:   `<interface type="network"><source network="default"></source><model type="virtio-non-transitional"></model><rom enabled="no"></rom><alias name="ua-red"></alias></interface>`,
		},
		{
			name:   "unmapped multus network",
			net:    multusNet("blue", "ns/blue"),
			iface:  v1.Interface{Name: "blue", InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}},
			errMsg: `spec.networks[0].multus.networkName: Invalid value: "ns/blue": not mapped to a host bridge or libvirt network (HostLayout.Networks["ns/blue"])`,
		},
		{
			name:   "DHCP options",
			net:    podNet("default"),
			iface:  v1.Interface{Name: "default", DHCPOptions: &v1.DHCPOptions{BootFileName: "pxe"}, InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}},
			errMsg: `spec.domain.devices.interfaces[0].dhcpOptions: Forbidden: DHCP options are served by KubeVirt's pod DHCP server, which the host layout does not have`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := devVMI([]v1.Interface{tc.iface}, []v1.Network{tc.net})
			layout := tc.layout
			layout.StateDir = "/state"
			c := devConverter(vmi, func(o *Options) { o.Layout = layout })
			d := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{}}
			err := c.interfaces(d)
			if tc.errMsg != "" {
				if err == nil || err.Error() != tc.errMsg {
					t.Fatalf("error = %v\nwant    %s", err, tc.errMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := xmlOf(t, &d.Devices.Interfaces[0]); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestNetworkQueuesCapped(t *testing.T) {
	vmi := devVMI(nil, nil)
	vmi.Spec.Domain.Devices.NetworkInterfaceMultiQueue = devPtr(true)
	vmi.Spec.Domain.CPU = &v1.CPU{Sockets: 2, Cores: 200, Threads: 1}
	if q := devConverter(vmi, nil).networkQueues(); q != maxNetworkQueues {
		t.Errorf("queues = %d, want %d", q, maxNetworkQueues)
	}
}

// Tap names as virt-handler creates them (pkg/network/link/names.go): tap0
// for the pod network and for a default multus network, "tap" + 11 hex digits
// of sha256(network name) for secondary multus networks.
func TestKubeVirtLayoutTapNames(t *testing.T) {
	vmi := devVMI(nil, nil)
	for _, tc := range []struct {
		net  v1.Network
		want string
	}{
		{podNet("default"), "tap0"},
		{v1.Network{Name: "primary", NetworkSource: v1.NetworkSource{Multus: &v1.MultusNetwork{NetworkName: "x", Default: true}}}, "tap0"},
		{multusNet("network1", "x"), "tapa7662f44d65"},
		{multusNet("network2", "x"), "tap27f4a77f94e"},
	} {
		att, err := KubeVirtLayout{}.Interface(vmi, &v1.Interface{Name: tc.net.Name}, &tc.net)
		if err != nil {
			t.Fatal(err)
		}
		if want := (InterfaceAttachment{Type: "ethernet", Target: tc.want, Managed: "no"}); att != want {
			t.Errorf("%s: got %+v, want %+v", tc.net.Name, att, want)
		}
	}
}
