package convert

import (
	"strings"
	"testing"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/api"
)

// runDeviceArea runs one area on a fresh domain.
func runDeviceArea(t *testing.T, c *converter, area func(*converter, *libvirtxml.Domain) error) (*libvirtxml.DomainDeviceList, error) {
	t.Helper()
	d := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{}}
	err := area(c, d)
	return d.Devices, err
}

// The expected XML of these tests was checked by hand against KubeVirt's
// converter/compute/{input_device,graphics,console,channels,balloon,rng,
// watchdog,tpm,sound,usb_redir,panic_devices}.go and, where the reference
// VMIs have the device, against /work/shared/kubevirt-reference/domains.
func TestDeviceAreas(t *testing.T) {
	const uidDir = "/var/run/kubevirt-private/11111111-2222-3333-4444-555555555555"
	for _, tc := range []struct {
		name string
		edit func(*v1.VirtualMachineInstance)
		opts func(*Options)
		area func(*converter, *libvirtxml.Domain) error
		get  func(*libvirtxml.DomainDeviceList) any
		want string
	}{
		{
			name: "tablet on the default (usb) bus",
			edit: func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Devices.Inputs = []v1.Input{{Name: "tablet0", Type: v1.InputTypeTablet}}
			},
			area: (*converter).inputs,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.Inputs },
			want: `<input type="tablet" bus="usb"><alias name="ua-tablet0"></alias></input>`,
		},
		{
			name: "tablet on virtio",
			edit: func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Devices.Inputs = []v1.Input{{Name: "t", Type: v1.InputTypeTablet, Bus: v1.InputBusVirtio}}
			},
			area: (*converter).inputs,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.Inputs },
			want: `<input type="tablet" bus="virtio" model="virtio"><alias name="ua-t"></alias></input>`,
		},
		{
			// KubeVirt's converter ignores the switch (its VM controller
			// acts on it; api.Decode does that for VirtualMachines), and so
			// does this one (checked against KubeVirt's code).
			name: "autoattachInputDevice adds nothing to a VMI",
			edit: func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.AutoattachInputDevice = devPtr(true) },
			area: (*converter).inputs,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.Inputs },
			want: ``,
		},
		{
			// The input api.Decode adds for a VM: only a name, a USB tablet.
			name: "an input with only a name is a usb tablet",
			edit: func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.Inputs = []v1.Input{{Name: "default-0"}} },
			area: (*converter).inputs,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.Inputs },
			want: `<input type="tablet" bus="usb"><alias name="ua-default-0"></alias></input>`,
		},
		{
			name: "VNC and VGA by default",
			area: (*converter).graphics,
			get:  func(l *libvirtxml.DomainDeviceList) any { return []any{l.Graphics, l.Videos} },
			want: `<graphics type="vnc"><listen type="socket" socket="` + uidDir + `/virt-vnc"></listen></graphics><video><model type="vga" heads="1" vram="16384"></model></video>`,
		},
		{
			name: "bochs for EFI guests",
			edit: func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Firmware = &v1.Firmware{Bootloader: &v1.Bootloader{EFI: &v1.EFI{}}}
			},
			area: (*converter).graphics,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.Videos },
			want: `<video><model type="bochs" heads="1"></model></video>`,
		},
		{
			name: "VGA for EFI guests without BochsForEFIGuests",
			edit: func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Firmware = &v1.Firmware{Bootloader: &v1.Bootloader{EFI: &v1.EFI{}}}
			},
			opts: func(o *Options) { o.BochsForEFIGuests = false },
			area: (*converter).graphics,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.Videos },
			want: `<video><model type="vga" heads="1" vram="16384"></model></video>`,
		},
		{
			name: "video type from the spec",
			edit: func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.Video = &v1.VideoDevice{Type: "virtio"} },
			area: (*converter).graphics,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.Videos },
			want: `<video><model type="virtio" heads="1" vram="16384"></model></video>`,
		},
		{
			name: "no graphics",
			edit: func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.AutoattachGraphicsDevice = devPtr(false) },
			area: (*converter).graphics,
			get:  func(l *libvirtxml.DomainDeviceList) any { return []any{l.Graphics, l.Videos} },
			want: ``,
		},
		{
			name: "serial console with log",
			area: (*converter).console,
			get:  func(l *libvirtxml.DomainDeviceList) any { return []any{l.Serials, l.Consoles} },
			want: `<serial type="unix"><source mode="bind" path="` + uidDir + `/virt-serial0"></source><target port="0"></target><log file="` + uidDir + `/virt-serial0-log" append="on"></log></serial><console type="pty"><target type="serial" port="0"></target></console>`,
		},
		{
			name: "serial console log turned off by the VMI",
			edit: func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.LogSerialConsole = devPtr(false) },
			area: (*converter).console,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.Serials },
			want: `<serial type="unix"><source mode="bind" path="` + uidDir + `/virt-serial0"></source><target port="0"></target></serial>`,
		},
		{
			name: "serial console log turned on by the VMI",
			edit: func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.LogSerialConsole = devPtr(true) },
			opts: func(o *Options) { o.SerialConsoleLog = false },
			area: (*converter).console,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.Serials },
			want: `<serial type="unix"><source mode="bind" path="` + uidDir + `/virt-serial0"></source><target port="0"></target><log file="` + uidDir + `/virt-serial0-log" append="on"></log></serial>`,
		},
		{
			name: "no serial console",
			edit: func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.AutoattachSerialConsole = devPtr(false) },
			area: (*converter).console,
			get:  func(l *libvirtxml.DomainDeviceList) any { return []any{l.Serials, l.Consoles} },
			want: ``,
		},
		{
			name: "guest agent channel",
			area: (*converter).channels,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.Channels },
			want: `<channel type="unix"><target type="virtio" name="org.qemu.guest_agent.0"></target></channel>`,
		},
		{
			name: "vsock with a context id picked by libvirt",
			edit: func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.AutoattachVSOCK = devPtr(true) },
			area: (*converter).channels,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.VSock },
			want: `<vsock model="virtio-non-transitional"><cid auto="yes"></cid></vsock>`,
		},
		{
			name: "vsock with KubeVirt's context id, transitional VMI",
			edit: func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Devices.AutoattachVSOCK = devPtr(true)
				v.Spec.Domain.Devices.UseVirtioTransitional = devPtr(true)
				v.Status.VSOCKCID = devPtr(uint32(123))
			},
			area: (*converter).channels,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.VSock },
			want: `<vsock model="virtio-non-transitional"><cid auto="no" address="123"></cid></vsock>`,
		},
		{
			name: "balloon",
			area: (*converter).balloon,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.MemBalloon },
			want: `<memballoon model="virtio-non-transitional" freePageReporting="on"><stats period="10"></stats></memballoon>`,
		},
		{
			name: "balloon of a high-performance VMI",
			edit: func(v *v1.VirtualMachineInstance) { v.Spec.Domain.CPU = &v1.CPU{DedicatedCPUPlacement: true} },
			area: (*converter).balloon,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.MemBalloon },
			want: `<memballoon model="virtio-non-transitional" freePageReporting="off"><stats period="10"></stats></memballoon>`,
		},
		{
			name: "balloon with free page reporting disabled by annotation, transitional",
			edit: func(v *v1.VirtualMachineInstance) {
				v.Annotations = map[string]string{v1.FreePageReportingDisabledAnnotation: "true"}
				v.Spec.Domain.Devices.UseVirtioTransitional = devPtr(true)
			},
			opts: func(o *Options) { o.MemBalloonStatsPeriod = 0 },
			area: (*converter).balloon,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.MemBalloon },
			want: `<memballoon model="virtio-transitional" freePageReporting="off"></memballoon>`,
		},
		{
			name: "no balloon",
			edit: func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.AutoattachMemBalloon = devPtr(false) },
			area: (*converter).balloon,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.MemBalloon },
			want: `<memballoon model="none"></memballoon>`,
		},
		{
			name: "rng",
			edit: func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.Rng = &v1.Rng{} },
			area: (*converter).rng,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.RNGs },
			want: `<rng model="virtio-non-transitional"><backend model="random">/dev/urandom</backend></rng>`,
		},
		{
			name: "watchdog",
			edit: func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Devices.Watchdog = &v1.Watchdog{Name: "wd", WatchdogDevice: v1.WatchdogDevice{I6300ESB: &v1.I6300ESBWatchdog{Action: v1.WatchdogActionPoweroff}}}
			},
			area: (*converter).watchdog,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.Watchdogs },
			want: `<watchdog model="i6300esb" action="poweroff"><alias name="ua-wd"></alias></watchdog>`,
		},
		{
			name: "tpm",
			edit: func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.TPM = &v1.TPMDevice{} },
			area: (*converter).tpm,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.TPMs },
			want: `<tpm model="tpm-tis"><backend type="emulator" version="2.0"></backend></tpm>`,
		},
		{
			name: "persistent tpm",
			edit: func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Devices.TPM = &v1.TPMDevice{Persistent: devPtr(true)}
			},
			area: (*converter).tpm,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.TPMs },
			want: `<tpm model="tpm-crb"><backend type="emulator" version="2.0" persistent_state="yes"></backend></tpm>`,
		},
		{
			name: "disabled tpm",
			edit: func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.TPM = &v1.TPMDevice{Enabled: devPtr(false)} },
			area: (*converter).tpm,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.TPMs },
			want: ``,
		},
		{
			name: "sound",
			edit: func(v *v1.VirtualMachineInstance) { v.Spec.Domain.Devices.Sound = &v1.SoundDevice{Name: "audio"} },
			area: (*converter).sound,
			get:  func(l *libvirtxml.DomainDeviceList) any { return l.Sounds },
			want: `<sound model="ich9"><alias name="ua-audio"></alias></sound>`,
		},
		{
			name: "usb redirection and panic devices",
			edit: func(v *v1.VirtualMachineInstance) {
				v.Spec.Domain.Devices.ClientPassthrough = &v1.ClientPassthroughDevices{}
				m := v1.Hyperv
				v.Spec.Domain.Devices.PanicDevices = []v1.PanicDevice{{Model: &m}, {}}
			},
			area: (*converter).inputs,
			get:  func(l *libvirtxml.DomainDeviceList) any { return []any{l.RedirDevs, l.Panics} },
			want: `<redirdev type="unix" bus="usb"><source mode="bind" path="` + uidDir + `/virt-usbredir-0"></source></redirdev>` +
				`<redirdev type="unix" bus="usb"><source mode="bind" path="` + uidDir + `/virt-usbredir-1"></source></redirdev>` +
				`<redirdev type="unix" bus="usb"><source mode="bind" path="` + uidDir + `/virt-usbredir-2"></source></redirdev>` +
				`<redirdev type="unix" bus="usb"><source mode="bind" path="` + uidDir + `/virt-usbredir-3"></source></redirdev>` +
				`<panic model="hyperv"></panic><panic></panic>`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := devVMI(nil, nil)
			if tc.edit != nil {
				tc.edit(vmi)
			}
			l, err := runDeviceArea(t, devConverter(vmi, tc.opts), tc.area)
			if err != nil {
				t.Fatal(err)
			}
			if got := xmlOf(t, tc.get(l)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestDeviceAreasRefuse(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*v1.VirtualMachineInstance)
		// area refuses the VMI; nil when the rule is the VMI's alone,
		// api.Validate's (the converter does not check it again).
		area func(*converter, *libvirtxml.Domain) error
		want string
	}{
		{"keyboard input", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Inputs = []v1.Input{{Name: "k", Type: v1.InputTypeKeyboard}}
		}, nil, `spec.domain.devices.inputs[0].type: Unsupported value: "keyboard"`},
		{"ps2 input", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Inputs = []v1.Input{{Name: "k", Type: v1.InputTypeTablet, Bus: "ps2"}}
		}, nil, `spec.domain.devices.inputs[0].bus: Unsupported value: "ps2"`},
		{"video without graphics", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.AutoattachGraphicsDevice = devPtr(false)
			v.Spec.Domain.Devices.Video = &v1.VideoDevice{Type: "vga"}
		}, nil, `spec.domain.devices.video: Invalid value: "vga": a video device cannot be configured`},
		{"unknown video", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Video = &v1.VideoDevice{Type: "s3"}
		}, nil, `spec.domain.devices.video.type: Unsupported value: "s3"`},
		{"diag288 watchdog", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Watchdog = &v1.Watchdog{Name: "w", WatchdogDevice: v1.WatchdogDevice{Diag288: &v1.Diag288Watchdog{}}}
		}, nil, `spec.domain.devices.watchdog.diag288: Unsupported value: "diag288"`},
		{"watchdog action", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Watchdog = &v1.Watchdog{Name: "w", WatchdogDevice: v1.WatchdogDevice{I6300ESB: &v1.I6300ESBWatchdog{Action: "dump"}}}
		}, nil, `spec.domain.devices.watchdog.i6300esb.action: Unsupported value: "dump"`},
		{"sound model", func(v *v1.VirtualMachineInstance) {
			v.Spec.Domain.Devices.Sound = &v1.SoundDevice{Name: "s", Model: "sb16"}
		}, nil, `spec.domain.devices.sound.model: Unsupported value: "sb16"`},
		{"panic model", func(v *v1.VirtualMachineInstance) {
			m := v1.PanicDeviceModel("pseries")
			v.Spec.Domain.Devices.PanicDevices = []v1.PanicDevice{{Model: &m}}
		}, nil, `spec.domain.devices.panicDevices[0].model: Unsupported value: "pseries"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := devVMI(nil, nil)
			tc.edit(vmi)
			if tc.area == nil {
				for _, fe := range api.Validate(vmi) {
					if strings.HasPrefix(fe.Error(), tc.want) {
						return
					}
				}
				t.Fatalf("api.Validate gives no error %s… (%v)", tc.want, api.Validate(vmi))
			}
			_, err := runDeviceArea(t, devConverter(vmi, nil), tc.area)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error = %v\nwant    %s…", err, tc.want)
			}
		})
	}
}

func TestNeedsUSB(t *testing.T) {
	vmi := devVMI(nil, nil)
	if devConverter(vmi, nil).needsUSB() {
		t.Error("needsUSB() = true for a VMI without USB devices")
	}
	vmi.Spec.Domain.Devices.Inputs = []v1.Input{{Name: "t", Type: v1.InputTypeTablet, Bus: v1.InputBusVirtio}}
	if devConverter(vmi, nil).needsUSB() {
		t.Error("needsUSB() = true for a virtio tablet")
	}
	vmi.Spec.Domain.Devices.Inputs = []v1.Input{{Name: "t", Type: v1.InputTypeTablet}}
	if !devConverter(vmi, nil).needsUSB() {
		t.Error("needsUSB() = false for a tablet on the default bus")
	}
}
