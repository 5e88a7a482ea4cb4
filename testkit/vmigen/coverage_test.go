package vmigen_test

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/vmigen"
)

// covered are the fields the generator must draw, as JSON paths of the
// VMI ([*] for list items, and a value after "=" where the value is what
// matters): each must appear in at least minCovered of the VMIs
// TestCoverage generates (1000 of each sequence).
var covered = []string{
	"metadata.namespace", "metadata.labels", "metadata.annotations.kubevirt.io/memfd",
	"metadata.annotations.kubevirt.io/disablePCIHole64", "metadata.annotations.kubevirt.io/placePCIDevicesOnRootComplex",
	"metadata.annotations.kubevirt.io/free-page-reporting-disabled", "metadata.annotations.alpha.kubevirt.io/EmulatorThreadCompleteToEvenParity",
	"spec.architecture", "spec.domain.machine.type", "spec.domain.chassis.manufacturer",
	"spec.domain.resources.requests.cpu", "spec.domain.resources.limits.cpu",
	"spec.domain.resources.requests.memory", "spec.domain.resources.limits.memory",
	"spec.domain.cpu.sockets", "spec.domain.cpu.cores", "spec.domain.cpu.threads", "spec.domain.cpu.maxSockets",
	"spec.domain.cpu.model=host-model", "spec.domain.cpu.model=host-passthrough", "spec.domain.cpu.model",
	"spec.domain.cpu.features[*].name", "spec.domain.cpu.features[*].policy",
	"spec.domain.cpu.dedicatedCpuPlacement", "spec.domain.cpu.isolateEmulatorThread",
	"spec.domain.memory.guest", "spec.domain.memory.maxGuest", "spec.domain.memory.hugepages.pageSize=2Mi", "spec.domain.memory.hugepages.pageSize=1Gi",
	"spec.domain.firmware.uuid", "spec.domain.firmware.serial", "spec.domain.firmware.bootloader.bios.useSerial",
	"spec.domain.firmware.bootloader.efi", "spec.domain.firmware.bootloader.efi.secureBoot", "spec.domain.firmware.bootloader.efi.persistent",
	"spec.domain.firmware.kernelBoot.container.kernelPath", "spec.domain.firmware.kernelBoot.container.initrdPath",
	"spec.domain.firmware.kernelBoot.kernelArgs", "spec.domain.firmware.kernelBoot.container.imagePullPolicy",
	"spec.domain.features.acpi.enabled", "spec.domain.features.apic.endOfInterrupt", "spec.domain.features.smm",
	"spec.domain.features.hyperv.relaxed", "spec.domain.features.hyperv.vapic", "spec.domain.features.hyperv.vpindex",
	"spec.domain.features.hyperv.runtime", "spec.domain.features.hyperv.synic", "spec.domain.features.hyperv.synictimer.direct",
	"spec.domain.features.hyperv.reset", "spec.domain.features.hyperv.frequencies", "spec.domain.features.hyperv.reenlightenment",
	"spec.domain.features.hyperv.ipi", "spec.domain.features.hyperv.evmcs", "spec.domain.features.hyperv.spinlocks.spinlocks",
	"spec.domain.features.hyperv.vendorid.vendorid", "spec.domain.features.hyperv.tlbflush",
	"spec.domain.features.hypervPassthrough", "spec.domain.features.kvm.hidden", "spec.domain.features.pvspinlock",
	"spec.domain.clock.utc", "spec.domain.clock.utc.offsetSeconds", "spec.domain.clock.timezone",
	"spec.domain.clock.timer.rtc.tickPolicy", "spec.domain.clock.timer.rtc.track", "spec.domain.clock.timer.pit.tickPolicy",
	"spec.domain.clock.timer.kvm", "spec.domain.clock.timer.hpet.present", "spec.domain.clock.timer.hyperv",
	"spec.domain.ioThreadsPolicy=shared", "spec.domain.ioThreadsPolicy=auto", "spec.domain.rebootPolicy",
	"spec.domain.devices.disks[*].disk.bus=virtio", "spec.domain.devices.disks[*].disk.bus=sata",
	"spec.domain.devices.disks[*].disk.bus=scsi", "spec.domain.devices.disks[*].disk.bus=usb",
	"spec.domain.devices.disks[*].disk.readonly", "spec.domain.devices.disks[*].disk.pciAddress",
	"spec.domain.devices.disks[*].cdrom.bus=sata", "spec.domain.devices.disks[*].cdrom.bus=scsi", "spec.domain.devices.disks[*].cdrom.tray",
	"spec.domain.devices.disks[*].lun.bus=scsi", "spec.domain.devices.disks[*].lun.reservation",
	"spec.domain.devices.disks[*].serial", "spec.domain.devices.disks[*].bootOrder", "spec.domain.devices.disks[*].cache",
	"spec.domain.devices.disks[*].io=native", "spec.domain.devices.disks[*].io=threads", "spec.domain.devices.disks[*].errorPolicy",
	"spec.domain.devices.disks[*].shareable", "spec.domain.devices.disks[*].dedicatedIOThread",
	"spec.domain.devices.disks[*].blockSize.custom.logical", "spec.domain.devices.disks[*].tag",
	"spec.volumes[*].containerDisk.image", "spec.volumes[*].containerDisk.path", "spec.volumes[*].containerDisk.imagePullPolicy",
	"spec.volumes[*].persistentVolumeClaim.claimName", "spec.volumes[*].persistentVolumeClaim.readOnly",
	"spec.volumes[*].dataVolume.name", "spec.volumes[*].ephemeral.persistentVolumeClaim.claimName",
	"spec.volumes[*].emptyDisk.capacity", "spec.volumes[*].hostDisk.type=Disk", "spec.volumes[*].hostDisk.type=DiskOrCreate",
	"spec.volumes[*].hostDisk.capacity", "spec.volumes[*].hostDisk.shared",
	"spec.volumes[*].cloudInitNoCloud.userData", "spec.volumes[*].cloudInitNoCloud.userDataBase64", "spec.volumes[*].cloudInitNoCloud.secretRef.name",
	"spec.volumes[*].cloudInitNoCloud.networkData", "spec.volumes[*].cloudInitConfigDrive.userData",
	"spec.volumes[*].configMap.name", "spec.volumes[*].configMap.volumeLabel", "spec.volumes[*].secret.secretName",
	"spec.volumes[*].downwardAPI.fields[*].path", "spec.volumes[*].serviceAccount.serviceAccountName",
	"spec.volumes[*].sysprep", "spec.volumes[*].downwardMetrics",
	"spec.domain.devices.filesystems[*].virtiofs", "spec.domain.devices.downwardMetrics",
	"spec.domain.devices.interfaces[*].masquerade", "spec.domain.devices.interfaces[*].bridge", "spec.domain.devices.interfaces[*].sriov",
	"spec.domain.devices.interfaces[*].model", "spec.domain.devices.interfaces[*].macAddress", "spec.domain.devices.interfaces[*].pciAddress",
	"spec.domain.devices.interfaces[*].bootOrder", "spec.domain.devices.interfaces[*].acpiIndex",
	"spec.domain.devices.interfaces[*].state=down", "spec.domain.devices.interfaces[*].state=absent",
	"spec.domain.devices.interfaces[*].ports[*].port", "spec.domain.devices.interfaces[*].dhcpOptions", "spec.domain.devices.interfaces[*].tag",
	"spec.networks[*].pod", "spec.networks[*].multus.networkName", "spec.networks[*].multus.default",
	"spec.domain.devices.autoattachPodInterface", "spec.domain.devices.inputs[*].bus=virtio", "spec.domain.devices.inputs[*].bus=usb",
	"spec.domain.devices.watchdog.i6300esb.action", "spec.domain.devices.rng", "spec.domain.devices.tpm.persistent",
	"spec.domain.devices.tpm.enabled", "spec.domain.devices.sound.model", "spec.domain.devices.video.type",
	"spec.domain.devices.autoattachGraphicsDevice", "spec.domain.devices.autoattachSerialConsole", "spec.domain.devices.logSerialConsole",
	"spec.domain.devices.autoattachMemBalloon", "spec.domain.devices.autoattachInputDevice", "spec.domain.devices.autoattachVSOCK",
	"spec.domain.devices.blockMultiQueue", "spec.domain.devices.networkInterfaceMultiqueue", "spec.domain.devices.useVirtioTransitional",
	"spec.domain.devices.disableHotplug", "spec.domain.devices.clientPassthrough", "spec.domain.devices.panicDevices[*].model",
	"spec.domain.devices.gpus[*].deviceName", "spec.domain.devices.gpus[*].virtualGPUOptions.display.enabled",
	"spec.domain.devices.hostDevices[*].deviceName",
	"spec.terminationGracePeriodSeconds", "spec.evictionStrategy", "spec.startStrategy", "spec.nodeSelector",
	"spec.tolerations", "spec.priorityClassName", "spec.hostname", "spec.subdomain",
	// The KubeVirt profile's.
	"spec.domain.cpu.numa.guestMappingPassthrough", "spec.domain.cpu.realtime", "spec.domain.cpu.realtime.mask",
	"spec.domain.devices.disks[*].blockSize.custom.discardGranularity",
	"spec.domain.features.hyperv.tlbflush.direct", "spec.domain.features.hyperv.tlbflush.extended",
	"spec.domain.ioThreadsPolicy=supplementalPool", "spec.domain.ioThreads.supplementalPoolThreadCount",
	"spec.domain.devices.disks[*].lun.bus=sata",
}

// minCovered is how many VMIs each covered field must appear in.
const minCovered = 3

// TestCoverage checks that the generator draws every field of covered
// (go test -v lists how many VMIs have each field the VMIs have).
func TestCoverage(t *testing.T) {
	counts := map[string]int{}
	total := 0
	for _, cfg := range propertyConfigs {
		for i := range 1000 {
			c := vmigen.Generate(cfg, i)
			data, err := json.Marshal(c.VMI)
			if err != nil {
				t.Fatal(err)
			}
			var doc any
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			paths := map[string]bool{}
			jsonPaths(doc, "", paths)
			for p := range paths {
				counts[p]++
			}
			total++
		}
	}
	for _, p := range covered {
		if counts[p] < minCovered {
			t.Errorf("%s: in %d of %d VMIs, want at least %d", p, counts[p], total, minCovered)
		}
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		if !strings.Contains(k, "=") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Logf("%5d  %s", counts[k], k)
	}
}

// jsonPaths adds to out the paths of every field of v, lists' items as
// [*], and for each string or boolean leaf also "path=value".
func jsonPaths(v any, prefix string, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			out[p] = true
			jsonPaths(e, p, out)
		}
	case []any:
		for _, e := range x {
			jsonPaths(e, prefix+"[*]", out)
		}
	case string:
		out[prefix+"="+x] = true
	}
}
