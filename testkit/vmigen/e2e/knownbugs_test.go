package e2e

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/vmigen"
)

// fixedBugs are the forms of a VMI that once were vmigen.KnownBugs (api
// accepted them, convert converted them, libvirt refused the domain), each
// with its smallest VMI (its spec.domain, indented 4, then anything at
// spec level, indented 2) and how it is fixed: refused is the field path
// api or convert now refuses it at; empty, libvirt now defines the domain
// convert gives.
var fixedBugs = map[string]struct{ spec, refused string }{
	// KubeVirt writes <clock> without offset; convert writes utc, which
	// is how libvirt reads it.
	"clock without offset": {`    clock: {timer: {rtc: {}}}
`, ""},
	// libvirt 9.0 has no pvpanic model; KubeVirt writes it (convert
	// refuses it where the host facts lack it).
	"pvpanic panic device": {`    devices: {panicDevices: [{model: pvpanic}]}
`, "spec.domain.devices.panicDevices[0].model"},
	// io native without a cache gets cache none, as KubeVirt's launcher
	// sets it; with another cache api refuses it.
	"io native without cache none": {`    devices:
      disks: [{name: data, io: native, disk: {bus: virtio}}]
  volumes: [{name: data, emptyDisk: {capacity: 1Gi}}]
`, ""},
	"io native with cache writeback": {`    devices:
      disks: [{name: data, io: native, cache: writeback, disk: {bus: virtio}}]
  volumes: [{name: data, emptyDisk: {capacity: 1Gi}}]
`, "spec.domain.devices.disks[0].cache"},
	// libvirt refuses to share a writable qcow2 image (an empty disk is
	// one); a read-only one it defines.
	"shareable qcow2 disk": {`    devices:
      disks: [{name: data, shareable: true, disk: {bus: virtio}}]
  volumes: [{name: data, emptyDisk: {capacity: 1Gi}}]
`, "spec.domain.devices.disks[0].shareable"},
	"shareable read-only qcow2 disk": {`    devices:
      disks: [{name: data, shareable: true, disk: {bus: virtio, readonly: true}}]
  volumes: [{name: data, emptyDisk: {capacity: 1Gi}}]
`, ""},
	"BIOS serial output without a serial console": {`    firmware: {bootloader: {bios: {useSerial: true}}}
    devices: {autoattachSerialConsole: false}
`, "spec.domain.firmware.bootloader.bios.useSerial"},
	// The default vGPU display is left off without graphics; one asked
	// for is refused.
	"vGPU display without graphics": {`    devices:
      autoattachGraphicsDevice: false
      gpus: [{name: vgpu, deviceName: nvidia.com/GRID_T4-1Q}]
`, ""},
	"vGPU display asked for without graphics": {`    devices:
      autoattachGraphicsDevice: false
      gpus: [{name: vgpu, deviceName: nvidia.com/GRID_T4-1Q, virtualGPUOptions: {display: {enabled: true}}}]
`, "spec.domain.devices.gpus[0].virtualGPUOptions.display.enabled"},
	"device names shared across kinds": {`    devices:
      disks: [{name: data, disk: {bus: virtio}}]
      inputs: [{name: data, type: tablet}]
  volumes: [{name: data, emptyDisk: {capacity: 1Gi}}]
`, "spec.domain.devices.inputs[0].name"},
	"a CPU feature named twice": {`    cpu: {features: [{name: pcid}, {name: pcid, policy: disable}]}
`, "spec.domain.cpu.features[1].name"},
	// The placement skips the slots of devices with addresses of their own.
	"a PCI address with placePCIDevicesOnRootComplex": {`    devices:
      disks: [{name: data, disk: {bus: virtio, pciAddress: "0000:00:04.0"}}]
  volumes: [{name: data, emptyDisk: {capacity: 1Gi}}]
`, ""},
}

// TestKnownBugs checks that vmigen.KnownBugs is empty and that each form
// once on it stays fixed: its smallest VMI is refused at the field path
// fixedBugs names (by api.Validate or convert.Convert), or its domain
// defines on libvirt (with VALIDATE).
//
//	go test ./testkit/vmigen/e2e -run TestKnownBugs -v
func TestKnownBugs(t *testing.T) {
	if len(vmigen.KnownBugs) > 0 {
		t.Errorf("vmigen.KnownBugs is %q: give each its smallest VMI here", vmigen.KnownBugs)
	}
	names := slices.Sorted(maps.Keys(fixedBugs))
	hosttest.Libvirt(t, testURI)
	hosttest.LockLibvirt(t, false)
	conn, err := libvirt.NewConnect(testURI)
	if err != nil {
		hosttest.Missing(t, "libvirtd unreachable at %s: %v", testURI, err)
	}
	t.Cleanup(func() { _, _ = conn.Close() })
	opts := convert.KubeVirtOptions()
	opts.DomainType = "qemu"
	// What this host's libvirt 9.0 lacks of the forms the bugs have.
	opts.HostFacts.Lacks = []convert.Lack{convert.LackSlotlessMaxMemory, convert.LackPvpanic}
	opts.Layout = convert.HostLayout{StateDir: convert.DefaultStateDir, ImageStore: convert.DefaultImageStore}
	opts.HostDevices = map[string]convert.HostDevice{"vgpu": {MdevUUID: "4b20d080-1b54-4048-85b3-a6a62d165c01"}}
	for i, name := range names {
		bug := fixedBugs[name]
		annotations := ""
		if strings.Contains(name, "placePCIDevicesOnRootComplex") {
			annotations = `, annotations: {kubevirt.io/placePCIDevicesOnRootComplex: "true"}`
		}
		doc := fmt.Sprintf("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata: {name: bug%d-%d, namespace: %s%s}\nspec:\n  domain:\n    memory: {guest: 128Mi}\n%s",
			i, os.Getpid(), testNamespace, annotations, bug.spec)
		vmi, err := api.Decode([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, doc)
		}
		api.Default(vmi, api.ClusterConfig{})
		refused := func(errs field.ErrorList) {
			if bug.refused == "" {
				t.Errorf("%s: refused, want a domain libvirt defines: %v\n%s", name, errs, doc)
				return
			}
			for _, e := range errs {
				if e.Field == bug.refused {
					return
				}
			}
			t.Errorf("%s: refused otherwise than at %s: %v\n%s", name, bug.refused, errs, doc)
		}
		if errs := api.Validate(vmi); len(errs) > 0 {
			refused(errs)
			continue
		}
		d, err := convert.Convert(vmi, opts)
		if err != nil {
			var fe *field.Error
			if !errors.As(err, &fe) {
				t.Fatalf("%s: %v", name, err)
			}
			refused(field.ErrorList{fe})
			continue
		}
		if bug.refused != "" {
			t.Errorf("%s: converted, want it refused at %s\n%s", name, bug.refused, doc)
			continue
		}
		xml, err := domain.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		if err := defineAndUndefine(t, conn, d.Name, string(xml)); err != nil {
			t.Errorf("%s: libvirt refuses its domain: %v\n%s\n%s", name, err, doc, xml)
		}
	}
}
