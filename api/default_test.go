package api

import (
	"reflect"
	"testing"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	v1 "kubevirt.io/api/core/v1"
)

// defaulted decodes a VMI whose spec is given as YAML (indented under
// "spec:") and applies Default with cfg.
func defaulted(t *testing.T, spec string, cfg ClusterConfig) *v1.VirtualMachineInstance {
	t.Helper()
	vmi := mustDecode(t, "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata:\n  name: d\nspec:\n"+spec)
	Default(vmi, cfg)
	return vmi
}

func qty(s string) resource.Quantity { return resource.MustParse(s) }

// TestDefaults checks each default. The expected values were read off
// KubeVirt's code at the reference commit: pkg/defaults/defaults.go,
// amd64.go and hyperv.go, pkg/network/vmispec/defaults.go,
// pkg/util/util.go (SetDefaultVolumeDisk), pkg/liveupdate/memory,
// pkg/virt-config (default cluster configuration) and kubevirt.io/api's
// core/v1/defaults.go; each case names the function it follows.
func TestDefaults(t *testing.T) {
	const mem = "  domain:\n    memory: {guest: 64Mi}\n"
	cases := []struct {
		name  string
		spec  string
		cfg   ClusterConfig
		check func(t *testing.T, vmi *v1.VirtualMachineInstance)
	}{
		// setDefaultMachineType, setDefaultArchitecture
		{"machine q35 and amd64", mem, ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "machine", vmi.Spec.Domain.Machine.Type, "q35")
			eq(t, "architecture", vmi.Spec.Architecture, "amd64")
		}},
		{"machine from cluster config", mem, ClusterConfig{MachineType: "pc-q35-7.2"}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "machine", vmi.Spec.Domain.Machine.Type, "pc-q35-7.2")
		}},
		{"machine kept", "  domain:\n    machine: {type: pc-q35-rhel9.2.0}\n    memory: {guest: 64Mi}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "machine", vmi.Spec.Domain.Machine.Type, "pc-q35-rhel9.2.0")
		}},
		// util.SetDefaultVolumeDisk, then SetDefaults_DiskDevice and setDefaultAmd64DisksBus
		{"a SATA disk for every volume without one", `  domain:
    memory: {guest: 64Mi}
    devices:
      disks:
      - name: b
        disk: {bus: virtio}
      filesystems:
      - name: fs
        virtiofs: {}
  volumes:
  - {name: a, emptyDisk: {capacity: 1Gi}}
  - {name: b, emptyDisk: {capacity: 1Gi}}
  - {name: fs, persistentVolumeClaim: {claimName: x}}
  - {name: c, containerDisk: {image: i}}
`, ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			var got []string
			for _, d := range vmi.Spec.Domain.Devices.Disks {
				got = append(got, d.Name+":"+string(d.Disk.Bus))
			}
			eq(t, "disks", got, []string{"b:virtio", "a:sata", "c:sata"})
		}},
		// setDefaultAmd64DisksBus and SetDefaults_CDRomTarget
		{"SATA bus, CD-ROM read-only with closed tray", `  domain:
    memory: {guest: 64Mi}
    devices:
      disks:
      - {name: a}
      - {name: b, cdrom: {}}
      - {name: c, lun: {}}
      - {name: d, cdrom: {bus: scsi, readonly: false, tray: open}}
`, ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			d := vmi.Spec.Domain.Devices.Disks
			eq(t, "disk bus", d[0].Disk.Bus, v1.DiskBusSATA)
			eq(t, "cdrom bus", d[1].CDRom.Bus, v1.DiskBusSATA)
			eq(t, "cdrom readonly", *d[1].CDRom.ReadOnly, true)
			eq(t, "cdrom tray", d[1].CDRom.Tray, v1.TrayStateClosed)
			eq(t, "lun bus", d[2].LUN.Bus, v1.DiskBusSATA)
			eq(t, "explicit bus", d[3].CDRom.Bus, v1.DiskBusSCSI)
			eq(t, "explicit readonly", *d[3].CDRom.ReadOnly, false)
			eq(t, "explicit tray", d[3].CDRom.Tray, v1.TrayStateOpen)
		}},
		// vmispec.SetDefaultNetworkInterface with the default cluster config (bridge)
		{"bridge pod interface when none", mem, ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "interfaces", vmi.Spec.Domain.Devices.Interfaces, []v1.Interface{*v1.DefaultBridgeNetworkInterface()})
			eq(t, "networks", vmi.Spec.Networks, []v1.Network{*v1.DefaultPodNetwork()})
		}},
		{"masquerade pod interface from cluster config", mem, ClusterConfig{DefaultNetworkInterface: "masquerade"}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "interfaces", vmi.Spec.Domain.Devices.Interfaces, []v1.Interface{*v1.DefaultMasqueradeNetworkInterface()})
		}},
		{"unknown cluster binding means bridge", mem, ClusterConfig{DefaultNetworkInterface: "slirpy"}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "interfaces", vmi.Spec.Domain.Devices.Interfaces, []v1.Interface{*v1.DefaultBridgeNetworkInterface()})
		}},
		{"no pod interface when autoattach is off", "  domain:\n    memory: {guest: 64Mi}\n    devices: {autoattachPodInterface: false}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "interfaces", len(vmi.Spec.Domain.Devices.Interfaces), 0)
			eq(t, "networks", len(vmi.Spec.Networks), 0)
		}},
		{"no pod interface when networks exist", mem + "  networks:\n  - {name: m, multus: {networkName: nad}}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "interfaces", len(vmi.Spec.Domain.Devices.Interfaces), 0)
			eq(t, "networks", len(vmi.Spec.Networks), 1)
		}},
		// SetDefaults_VirtualMachineInstance + SetDefaults_FeatureState
		{"features {} turns ACPI on", mem, ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "acpi", *vmi.Spec.Domain.Features.ACPI.Enabled, true)
		}},
		{"ACPI off stays off", "  domain:\n    memory: {guest: 64Mi}\n    features: {acpi: {enabled: false}, smm: {}, apic: {}}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			f := vmi.Spec.Domain.Features
			eq(t, "acpi", *f.ACPI.Enabled, false)
			eq(t, "smm", *f.SMM.Enabled, true)
			eq(t, "apic", *f.APIC.Enabled, true)
		}},
		// SetDefaultGuestCPUTopology (Quantity.Value rounds up)
		{"sockets from the CPU limit", "  domain:\n    memory: {guest: 64Mi}\n    resources: {limits: {cpu: 2500m}, requests: {cpu: '1'}}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			c := vmi.Spec.Domain.CPU
			eq(t, "topology", [3]uint32{c.Sockets, c.Cores, c.Threads}, [3]uint32{3, 1, 1})
		}},
		{"sockets from the CPU request", "  domain:\n    memory: {guest: 64Mi}\n    resources: {requests: {cpu: 500m}}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			c := vmi.Spec.Domain.CPU
			eq(t, "topology", [3]uint32{c.Sockets, c.Cores, c.Threads}, [3]uint32{1, 1, 1})
		}},
		{"one socket without resources", mem, ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			c := vmi.Spec.Domain.CPU
			eq(t, "topology", [3]uint32{c.Sockets, c.Cores, c.Threads}, [3]uint32{1, 1, 1})
		}},
		{"explicit topology kept", "  domain:\n    memory: {guest: 64Mi}\n    cpu: {cores: 4}\n    resources: {limits: {cpu: '8'}}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			c := vmi.Spec.Domain.CPU
			eq(t, "topology", [3]uint32{c.Sockets, c.Cores, c.Threads}, [3]uint32{0, 4, 0})
		}},
		// setDefaultResourceRequests
		{"CPU request from the limit", "  domain:\n    memory: {guest: 64Mi}\n    resources: {limits: {cpu: '2'}}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "request", vmi.Spec.Domain.Resources.Requests.Cpu().String(), "2")
		}},
		// setDefaultCPUModel
		{"CPU model host-model", mem, ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "model", vmi.Spec.Domain.CPU.Model, "host-model")
		}},
		{"CPU model from cluster config", mem, ClusterConfig{CPUModel: "Haswell-noTSX"}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "model", vmi.Spec.Domain.CPU.Model, "Haswell-noTSX")
		}},
		{"CPU model kept", "  domain:\n    memory: {guest: 64Mi}\n    cpu: {model: host-passthrough}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "model", vmi.Spec.Domain.CPU.Model, "host-passthrough")
		}},
		// setGuestMemory
		{"guest memory from the request", "  domain:\n    resources: {requests: {memory: 1Gi}, limits: {memory: 2Gi}}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "guest", vmi.Spec.Domain.Memory.Guest.String(), "1Gi")
		}},
		{"guest memory from the limit", "  domain:\n    resources: {limits: {memory: 2Gi}}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "guest", vmi.Spec.Domain.Memory.Guest.String(), "2Gi")
		}},
		{"guest memory from the hugepage size", "  domain:\n    memory: {hugepages: {pageSize: 2Mi}}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "guest", vmi.Spec.Domain.Memory.Guest.String(), "2Mi")
		}},
		// setDefaults_Input
		{"input bus usb, type tablet", "  domain:\n    memory: {guest: 64Mi}\n    devices:\n      inputs: [{name: t}]\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			in := vmi.Spec.Domain.Devices.Inputs[0]
			eq(t, "input", [2]string{string(in.Bus), string(in.Type)}, [2]string{"usb", "tablet"})
		}},
		// SetAmd64Watchdog
		{"watchdog i6300esb, action reset", "  domain:\n    memory: {guest: 64Mi}\n    devices:\n      watchdog: {name: w}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "action", vmi.Spec.Domain.Devices.Watchdog.I6300ESB.Action, v1.WatchdogActionReset)
		}},
		{"watchdog action kept", "  domain:\n    memory: {guest: 64Mi}\n    devices:\n      watchdog: {name: w, i6300esb: {action: poweroff}}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "action", vmi.Spec.Domain.Devices.Watchdog.I6300ESB.Action, v1.WatchdogActionPoweroff)
		}},
		// SetHypervFeatureDependencies
		{"Hyper-V requirements enabled", "  domain:\n    memory: {guest: 64Mi}\n    features:\n      hyperv: {synictimer: {}, ipi: {}, evmcs: {}}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			h := vmi.Spec.Domain.Features.Hyperv
			eq(t, "synic", *h.SyNIC.Enabled, true)
			eq(t, "vpindex", *h.VPIndex.Enabled, true)
			eq(t, "vapic", *h.VAPIC.Enabled, true)
			eq(t, "cpu features", vmi.Spec.Domain.CPU.Features, []v1.CPUFeature{{Name: "vmx", Policy: "require"}})
		}},
		{"Hyper-V settling stops at a disabled requirement", "  domain:\n    memory: {guest: 64Mi}\n    features:\n      hyperv: {ipi: {}, vpindex: {enabled: false}, evmcs: {}}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			h := vmi.Spec.Domain.Features.Hyperv
			eq(t, "vapic (evmcs comes first)", *h.VAPIC.Enabled, true)
			eq(t, "vpindex", *h.VPIndex.Enabled, false)
			eq(t, "no vmx after the stop", len(vmi.Spec.Domain.CPU.Features), 0)
		}},
		{"Hyper-V spinlocks retries", "  domain:\n    memory: {guest: 64Mi}\n    features:\n      hyperv: {spinlocks: {}}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "retries", *vmi.Spec.Domain.Features.Hyperv.Spinlocks.Retries, uint32(4096))
		}},
		// setupCPUHotplug (LiveUpdate, ratio 4, 512 vCPU cap)
		{"maxSockets is 4 times sockets", "  domain:\n    memory: {guest: 64Mi}\n    cpu: {sockets: 2, cores: 2, threads: 1}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "maxSockets", vmi.Spec.Domain.CPU.MaxSockets, uint32(8))
		}},
		{"maxSockets capped at 512 vCPUs", "  domain:\n    memory: {guest: 64Mi}\n    cpu: {sockets: 4, cores: 64, threads: 1}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "maxSockets", vmi.Spec.Domain.CPU.MaxSockets, uint32(8))
		}},
		{"maxSockets never below sockets", "  domain:\n    memory: {guest: 64Mi}\n    cpu: {sockets: 3, cores: 200, threads: 1}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "maxSockets", vmi.Spec.Domain.CPU.MaxSockets, uint32(3))
		}},
		{"maxSockets from cluster config", "  domain:\n    memory: {guest: 64Mi}\n    cpu: {sockets: 2}\n", ClusterConfig{MaxCPUSockets: 6}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "maxSockets", vmi.Spec.Domain.CPU.MaxSockets, uint32(6))
		}},
		{"cluster maxSockets raised to sockets", "  domain:\n    memory: {guest: 64Mi}\n    cpu: {sockets: 8}\n", ClusterConfig{MaxCPUSockets: 6}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "maxSockets", vmi.Spec.Domain.CPU.MaxSockets, uint32(8))
		}},
		{"maxSockets kept", "  domain:\n    memory: {guest: 64Mi}\n    cpu: {sockets: 2, maxSockets: 3}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "maxSockets", vmi.Spec.Domain.CPU.MaxSockets, uint32(3))
		}},
		{"no hotplug maxima under Stage", "  domain:\n    memory: {guest: 2Gi}\n", ClusterConfig{RolloutStrategy: v1.VMRolloutStrategyStage}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "maxSockets", vmi.Spec.Domain.CPU.MaxSockets, uint32(0))
			eq(t, "maxGuest", vmi.Spec.Domain.Memory.MaxGuest == nil, true)
		}},
		{"hotplug ratio from cluster config", "  domain:\n    memory: {guest: 2Gi}\n", ClusterConfig{MaxHotplugRatio: 2}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "maxSockets", vmi.Spec.Domain.CPU.MaxSockets, uint32(2))
			eq(t, "maxGuest", vmi.Spec.Domain.Memory.MaxGuest.String(), "4Gi")
		}},
		// setupMemoryHotplug + memory.ValidateLiveUpdateMemory
		{"maxGuest is 4 times guest memory", "  domain:\n    memory: {guest: 2Gi}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "maxGuest", vmi.Spec.Domain.Memory.MaxGuest.String(), "8Gi")
		}},
		{"no maxGuest below 1Gi", "  domain:\n    memory: {guest: 512Mi}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "maxGuest", vmi.Spec.Domain.Memory.MaxGuest == nil, true)
		}},
		{"no maxGuest when not 2Mi aligned", "  domain:\n    memory: {guest: 1025Mi}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "maxGuest", vmi.Spec.Domain.Memory.MaxGuest == nil, true)
		}},
		{"no maxGuest when not 1Gi aligned with 1Gi pages", "  domain:\n    memory: {guest: 1026Mi, hugepages: {pageSize: 1Gi}}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "maxGuest", vmi.Spec.Domain.Memory.MaxGuest == nil, true)
		}},
		{"no maxGuest for realtime", "  domain:\n    memory: {guest: 2Gi}\n    cpu: {realtime: {}}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "maxGuest", vmi.Spec.Domain.Memory.MaxGuest == nil, true)
		}},
		{"no maxGuest with launch security", "  domain:\n    memory: {guest: 2Gi}\n    launchSecurity: {sev: {}}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "maxGuest", vmi.Spec.Domain.Memory.MaxGuest == nil, true)
		}},
		{"maxGuest from cluster config", "  domain:\n    memory: {guest: 2Gi}\n", ClusterConfig{MaxGuest: ptr(qty("6Gi"))}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "maxGuest", vmi.Spec.Domain.Memory.MaxGuest.String(), "6Gi")
		}},
		{"cluster maxGuest below guest: no hotplug", "  domain:\n    memory: {guest: 8Gi}\n", ClusterConfig{MaxGuest: ptr(qty("6Gi"))}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "maxGuest", vmi.Spec.Domain.Memory.MaxGuest == nil, true)
		}},
		// setGuestMemoryStatus, setCurrentCPUTopologyStatus
		{"status memory and topology", "  domain:\n    memory: {guest: 2Gi}\n    cpu: {cores: 2}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "guestAtBoot", vmi.Status.Memory.GuestAtBoot.String(), "2Gi")
			eq(t, "topology", *vmi.Status.CurrentCPUTopology, v1.CPUTopology{Cores: 2})
		}},
		// setDefaultPullPoliciesOnContainerDisks
		{"container disk pull policies", mem + `  volumes:
  - {name: a, containerDisk: {image: "r/img"}}
  - {name: b, containerDisk: {image: "r/img:latest"}}
  - {name: c, containerDisk: {image: "r/img:1.0"}}
  - {name: d, containerDisk: {image: "r/img@sha256:00"}}
  - {name: e, containerDisk: {image: "r/img", imagePullPolicy: Never}}
`, ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			var got []k8sv1.PullPolicy
			for _, v := range vmi.Spec.Volumes {
				got = append(got, v.ContainerDisk.ImagePullPolicy)
			}
			eq(t, "policies", got, []k8sv1.PullPolicy{k8sv1.PullAlways, k8sv1.PullAlways, k8sv1.PullIfNotPresent, k8sv1.PullIfNotPresent, k8sv1.PullNever})
		}},
		// setDefaultEvictionStrategy with the default cluster config
		{"eviction strategy None", mem, ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "eviction", *vmi.Spec.EvictionStrategy, v1.EvictionStrategyNone)
		}},
		{"eviction strategy from cluster config", mem, ClusterConfig{EvictionStrategy: v1.EvictionStrategyLiveMigrate}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "eviction", *vmi.Spec.EvictionStrategy, v1.EvictionStrategyLiveMigrate)
		}},
		{"eviction strategy kept", mem + "  evictionStrategy: External\n", ClusterConfig{EvictionStrategy: v1.EvictionStrategyLiveMigrate}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "eviction", *vmi.Spec.EvictionStrategy, v1.EvictionStrategyExternal)
		}},
		// SetDefaults_*Timer
		{"timers enabled", "  domain:\n    memory: {guest: 64Mi}\n    clock: {utc: {}, timer: {hpet: {}, rtc: {present: false}}}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			tm := vmi.Spec.Domain.Clock.Timer
			eq(t, "hpet", *tm.HPET.Enabled, true)
			eq(t, "rtc", *tm.RTC.Enabled, false)
		}},
		// mutator setDefaultPciTopologyVersion
		{"PCI topology annotation", mem, ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "annotation", vmi.Annotations[v1.PciTopologyVersionAnnotation], v1.PciTopologyVersionV3)
		}},
		// this library: deterministic identity instead of a random UUID
		{"namespace and derived firmware uuid", mem, ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "namespace", vmi.Namespace, "default")
			eq(t, "uuid", string(vmi.Spec.Domain.Firmware.UUID), string(FirmwareUUID("default", "d")))
		}},
		{"firmware uuid kept", "  domain:\n    memory: {guest: 64Mi}\n    firmware: {uuid: 5d307ca9-b3ef-428c-8861-06e72d69f223}\n", ClusterConfig{}, func(t *testing.T, vmi *v1.VirtualMachineInstance) {
			eq(t, "uuid", string(vmi.Spec.Domain.Firmware.UUID), "5d307ca9-b3ef-428c-8861-06e72d69f223")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.check(t, defaulted(t, c.spec, c.cfg))
		})
	}
}

// TestFirmwareUUID pins the derivation: changing it would change the UUID
// of every existing VM (value computed once with uuid.NewSHA1 and checked
// to be a version 5 UUID).
func TestFirmwareUUID(t *testing.T) {
	eq(t, "default/d", string(FirmwareUUID("default", "d")), string(FirmwareUUID("", "d")))
	if FirmwareUUID("a", "b") == FirmwareUUID("b", "a") || FirmwareUUID("a", "b") == FirmwareUUID("a", "c") {
		t.Error("different VMIs share a UUID")
	}
	got := string(FirmwareUUID("prod", "server"))
	eq(t, "prod/server", got, "2f59aafd-4295-5d38-8b3d-928839805c4d")
	eq(t, "version", got[14], byte('5'))
}

// TestDefaultIdempotent checks that a second Default changes nothing and
// that two VMIs defaulted apart are equal (no randomness, no map order).
func TestDefaultIdempotent(t *testing.T) {
	for _, name := range []string{"vmi-small.yaml", "vm-server.yaml", "vmi-windows.yaml"} {
		t.Run(name, func(t *testing.T) {
			a, _ := Decode(readTestdata(t, name))
			b, _ := Decode(readTestdata(t, name))
			Default(a, ClusterConfig{})
			Default(b, ClusterConfig{})
			if !reflect.DeepEqual(a, b) {
				t.Fatal("two runs differ")
			}
			again := a.DeepCopy()
			Default(again, ClusterConfig{})
			if !reflect.DeepEqual(a, again) {
				t.Error("a second Default changed the VMI")
			}
		})
	}
	Default(nil, ClusterConfig{}) // must not panic
}

func eq[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: got %v, want %v", what, got, want)
	}
}

func ptr[T any](v T) *T { return &v }
