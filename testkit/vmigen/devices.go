package vmigen

import (
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// videoTypes are the video models drawn.
var videoTypes = []string{"vga", "cirrus", "virtio", "ramfb", "bochs"}

// devices draws the other devices and the autoattach switches: tablets,
// watchdog, RNG, TPM, sound, video, panic devices, USB redirection, the
// virtio options, and in the host layout of the Supported profile GPUs
// and host devices mapped to host addresses. In the KubeVirt profile the
// downward metrics device, when the storage area decided on it.
func (g *gen) devices() {
	devs := &g.spec.Domain.Devices
	if g.p(0.25) {
		for range g.n(1, 2) {
			devs.Inputs = append(devs.Inputs, v1.Input{
				Name: g.name("tablet"),
				Bus:  pick(g, "", v1.InputBusUSB, v1.InputBusVirtio),
				Type: v1.InputTypeTablet,
			})
		}
	}
	if g.p(0.15) {
		devs.Watchdog = &v1.Watchdog{Name: g.name("watchdog"), WatchdogDevice: v1.WatchdogDevice{
			I6300ESB: &v1.I6300ESBWatchdog{Action: pick(g, "", v1.WatchdogActionReset, v1.WatchdogActionPoweroff, v1.WatchdogActionShutdown)},
		}}
	}
	if g.p(0.25) {
		devs.Rng = &v1.Rng{}
	}
	if g.p(0.12) {
		devs.TPM = pick(g, &v1.TPMDevice{}, &v1.TPMDevice{Persistent: ptr(true)}, &v1.TPMDevice{Enabled: ptr(false)})
	}
	if g.p(0.1) {
		devs.Sound = &v1.SoundDevice{Name: g.name("sound"), Model: pick(g, "", "ich9", "ac97")}
	}
	switch {
	case g.p(0.08):
		devs.AutoattachGraphicsDevice = ptr(false)
	case g.p(0.15):
		devs.Video = &v1.VideoDevice{Type: pick(g, videoTypes...)}
	case g.p(0.05):
		devs.AutoattachGraphicsDevice = ptr(true)
	}
	if g.p(0.08) && !g.biosSerial() {
		devs.AutoattachSerialConsole = ptr(false)
	} else if g.p(0.15) {
		devs.LogSerialConsole = ptr(g.p(0.5))
	}
	if g.p(0.08) {
		devs.AutoattachMemBalloon = ptr(g.p(0.2))
	}
	if g.p(0.05) {
		devs.AutoattachInputDevice = ptr(g.p(0.5))
	}
	if !g.kv && g.p(0.05) {
		// VSOCK: behind a gate kvdiff leaves off.
		devs.AutoattachVSOCK = ptr(true)
	}
	if g.p(0.1) {
		devs.BlockMultiQueue = ptr(g.p(0.8))
	}
	if g.p(0.1) {
		devs.NetworkInterfaceMultiQueue = ptr(g.p(0.8))
	}
	if g.p(0.08) {
		devs.UseVirtioTransitional = ptr(g.p(0.8))
	}
	if g.p(0.1) {
		devs.DisableHotplug = true
	}
	if g.p(0.05) {
		devs.ClientPassthrough = &v1.ClientPassthroughDevices{}
	}
	if g.p(0.08) {
		var model *v1.PanicDeviceModel
		if g.p(0.7) {
			models := []v1.PanicDeviceModel{v1.Isa, v1.Hyperv}
			if g.kv {
				models = append(models, v1.Pvpanic)
			}
			model = ptr(pick(g, models...))
			if *model == v1.Pvpanic {
				g.beyondWhereLacked(devicesPath.Child("panicDevices").Index(0).Child("model"), convert.LackPvpanic)
			}
		}
		devs.PanicDevices = []v1.PanicDevice{{Model: model}}
	}
	if g.metricsDevice {
		devs.DownwardMetrics = &v1.DownwardMetrics{}
	}
	if g.host && !g.kv {
		g.hostDeviceList()
	}
}

// hostDeviceList draws GPUs and host devices, each mapped to a host PCI
// address or a mediated device in the host layout's Options; a mediated
// GPU may have a display.
func (g *gen) hostDeviceList() {
	devs := &g.spec.Domain.Devices
	if g.p(0.08) {
		gpu := v1.GPU{Name: g.name("gpu"), DeviceName: pick(g, "nvidia.com/GP102GL_Tesla_P40", "nvidia.com/GRID_T4-1Q")}
		if g.p(0.5) {
			g.hostDevices[gpu.Name] = convert.HostDevice{MdevUUID: g.uuid()}
			if g.p(0.4) {
				gpu.VirtualGPUOptions = &v1.VGPUOptions{Display: &v1.VGPUDisplayOptions{Enabled: ptr(g.p(0.7))}}
				if g.p(0.5) {
					gpu.VirtualGPUOptions.Display.RamFB = &v1.FeatureState{Enabled: ptr(g.p(0.5))}
				}
			}
		} else {
			g.hostDevices[gpu.Name] = convert.HostDevice{PCIAddress: g.hostPCIAddress()}
		}
		if o := gpu.VirtualGPUOptions; o != nil && *o.Display.Enabled && devs.AutoattachGraphicsDevice != nil && !*devs.AutoattachGraphicsDevice {
			// A vGPU display needs graphics: convert refuses one asked
			// for without (and leaves the default display off).
			o.Display.Enabled = ptr(false)
		}
		devs.GPUs = append(devs.GPUs, gpu)
	}
	if g.p(0.08) {
		hd := v1.HostDevice{Name: g.name("hostdev"), DeviceName: "example.com/accelerator"}
		if g.p(0.3) {
			g.hostDevices[hd.Name] = convert.HostDevice{MdevUUID: g.uuid()}
		} else {
			g.hostDevices[hd.Name] = convert.HostDevice{PCIAddress: g.hostPCIAddress()}
		}
		devs.HostDevices = append(devs.HostDevices, hd)
	}
}

// biosSerial tells whether the BIOS sends its output to the serial
// console.
func (g *gen) biosSerial() bool {
	fw := g.spec.Domain.Firmware
	return fw != nil && fw.Bootloader != nil && fw.Bootloader.BIOS != nil &&
		fw.Bootloader.BIOS.UseSerial != nil && *fw.Bootloader.BIOS.UseSerial
}
