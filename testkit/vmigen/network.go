package vmigen

import (
	"fmt"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// nicModels are the NIC models drawn (empty: virtio).
var nicModels = []string{"", "virtio", "e1000", "e1000e", "igb", "ne2k_pci", "pcnet", "rtl8139"}

// multusNetworks are the NetworkAttachmentDefinitions drawn, and
// hostAttachments how the host layout attaches them.
var (
	multusNetworks  = []string{"blue-net", "tenant-a/red-net", "storage", "ns1/green"}
	hostAttachments = []convert.InterfaceAttachment{
		{Type: "bridge", Source: "br0"},
		{Type: "network", Source: "default"},
		{Type: "user"},
	}
)

// network draws the interfaces and their networks: KubeVirt's default pod
// interface (nothing written), none at all, or a list — the pod network
// with masquerade or bridge, or a multus default network, and up to two
// secondary multus networks (bridge, or SR-IOV with a mapped VF in the
// host layout) — with their options.
func (g *gen) network() {
	switch pickW(g, weighted[string]{4, "default"}, weighted[string]{1, "none"}, weighted[string]{6, "list"}) {
	case "default":
		g.names["default"] = true // the name Default gives the interface
		return
	case "none":
		g.spec.Domain.Devices.AutoattachPodInterface = ptr(false)
		return
	}
	pod := g.p(0.85)
	if pod {
		name := g.name(pick(g, "default", "pod", "eth0"))
		iface := v1.Interface{Name: name}
		if g.p(0.6) {
			iface.Masquerade = &v1.InterfaceMasquerade{}
		} else {
			iface.Bridge = &v1.InterfaceBridge{}
		}
		g.addInterface(iface, v1.Network{Name: name, NetworkSource: v1.NetworkSource{Pod: &v1.PodNetwork{}}}, true, true)
	} else if g.p(0.5) {
		name := g.name("mdefault")
		net := pick(g, multusNetworks...)
		g.mapNetwork(net)
		g.addInterface(v1.Interface{Name: name, InterfaceBindingMethod: v1.InterfaceBindingMethod{Bridge: &v1.InterfaceBridge{}}},
			v1.Network{Name: name, NetworkSource: v1.NetworkSource{Multus: &v1.MultusNetwork{NetworkName: net, Default: true}}}, false, true)
	}
	taken := map[string]bool{}
	for range pickW(g, weighted[int]{5, 0}, weighted[int]{3, 1}, weighted[int]{1, 2}) {
		net := pick(g, multusNetworks...)
		if taken[net] {
			continue
		}
		taken[net] = true
		name := g.name(pick(g, "net", "blue", "data"))
		iface := v1.Interface{Name: name}
		if g.host && !g.kv && g.p(0.2) {
			iface.SRIOV = &v1.InterfaceSRIOV{}
			g.hostDevices[name] = convert.HostDevice{PCIAddress: g.hostPCIAddress()}
		} else {
			g.mapNetwork(net)
			iface.Bridge = &v1.InterfaceBridge{}
		}
		g.addInterface(iface, v1.Network{Name: name, NetworkSource: v1.NetworkSource{Multus: &v1.MultusNetwork{NetworkName: net}}}, false, false)
	}
	if len(g.spec.Networks) == 0 {
		g.spec.Domain.Devices.AutoattachPodInterface = ptr(false)
	}
}

// mapNetwork maps a multus network to a host attachment in the host
// layout.
func (g *gen) mapNetwork(net string) {
	if g.host {
		if _, ok := g.networks[net]; !ok {
			g.networks[net] = pick(g, hostAttachments...)
		}
	}
}

// addInterface draws the options of an interface (onPod: on the pod
// network; primary: the pod or multus default network) and adds it with
// its network.
func (g *gen) addInterface(iface v1.Interface, net v1.Network, onPod, primary bool) {
	ip := ifacesPath.Index(len(g.spec.Domain.Devices.Interfaces))
	sriov := iface.SRIOV != nil
	if !sriov && g.p(0.3) {
		iface.Model = pick(g, nicModels...)
	}
	if g.p(0.3) {
		iface.MacAddress = g.mac()
	}
	if g.p(0.08) {
		iface.PciAddress = g.pciAddress()
	}
	if g.p(0.1) {
		iface.BootOrder = g.bootOrder()
	}
	if !sriov && g.p(0.05) {
		for {
			n := g.n(1, 16)
			if !g.acpiIndexes[n] {
				g.acpiIndexes[n] = true
				iface.ACPIIndex = n
				break
			}
		}
	}
	switch {
	case !sriov && g.p(0.1):
		iface.State = pick(g, v1.InterfaceStateLinkDown, v1.InterfaceStateLinkUp)
	case iface.Bridge != nil && !primary && g.p(0.08):
		iface.State = v1.InterfaceStateAbsent
	}
	if onPod && g.p(0.2) {
		for i := range g.n(1, 3) {
			p := v1.Port{Port: int32(pick(g, 22, 80, 443, 5432, 8080) + i)}
			if g.p(0.5) {
				p.Name = fmt.Sprintf("port%d", i)
			}
			if g.p(0.5) {
				p.Protocol = pick(g, "TCP", "UDP")
			}
			iface.Ports = append(iface.Ports, p)
		}
	}
	if !sriov && g.p(0.06) && (!g.host || g.kv) {
		iface.DHCPOptions = &v1.DHCPOptions{BootFileName: "pxelinux.0", TFTPServerName: "tftp.example.com", NTPServers: []string{"192.0.2.1"},
			PrivateOptions: []v1.DHCPPrivateOptions{{Option: 240, Value: "extra"}}}
		if g.host {
			g.beyond(ip.Child("dhcpOptions"))
		}
	}
	if !g.configDrive && g.p(0.05) {
		iface.Tag = "nic-" + iface.Name
	}
	g.spec.Domain.Devices.Interfaces = append(g.spec.Domain.Devices.Interfaces, iface)
	g.spec.Networks = append(g.spec.Networks, net)
}

// hostPCIAddress draws a host PCI address for a host device the host
// layout maps (a VF, a GPU), unique within the VMI.
func (g *gen) hostPCIAddress() string {
	for {
		a := fmt.Sprintf("0000:%02x:%02x.%x", g.n(0x40, 0x8f), g.n(0, 0x1f), g.n(0, 7))
		if !g.hostPCI[a] {
			g.hostPCI[a] = true
			return a
		}
	}
}
