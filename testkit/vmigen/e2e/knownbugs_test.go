package e2e

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"libvirt.org/go/libvirt"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/vmigen"
)

// knownBugs are the smallest VMI of each of vmigen.KnownBugs (its
// spec.domain, indented 4, then anything at spec level, indented 2) and
// what libvirt says when it refuses the domain.
var knownBugs = map[string]struct{ spec, libvirt string }{
	"clock without offset": {`    clock: {timer: {rtc: {}}}
`, "failed to validate against schema"},
	"pvpanic panic device": {`    devices: {panicDevices: [{model: pvpanic}]}
`, "failed to validate against schema"},
	"io native without cache none": {`    devices:
      disks: [{name: data, io: native, disk: {bus: virtio}}]
  volumes: [{name: data, emptyDisk: {capacity: 1Gi}}]
`, "io='native' needs either no disk cache or directsync cache mode"},
	"shareable qcow2 disk": {`    devices:
      disks: [{name: data, shareable: true, disk: {bus: virtio}}]
  volumes: [{name: data, emptyDisk: {capacity: 1Gi}}]
`, "shared access for disk 'vda' requires use of supported storage format"},
	"BIOS serial output without a serial console": {`    firmware: {bootloader: {bios: {useSerial: true}}}
    devices: {autoattachSerialConsole: false}
`, "need at least one serial port to use BIOS serial output"},
	"vGPU display without graphics": {`    devices:
      autoattachGraphicsDevice: false
      gpus: [{name: vgpu, deviceName: nvidia.com/GRID_T4-1Q}]
`, "graphics device is needed for attribute value 'display=on'"},
	"device names shared across kinds": {`    devices:
      disks: [{name: default, disk: {bus: virtio}}]
  volumes: [{name: default, emptyDisk: {capacity: 1Gi}}]
`, "non unique alias detected: ua-default"},
	"a CPU feature named twice": {`    cpu: {features: [{name: pcid}, {name: pcid, policy: disable}]}
`, "CPU feature 'pcid' specified more than once"},
	"a PCI address with placePCIDevicesOnRootComplex": {`    devices:
      disks: [{name: data, disk: {bus: virtio, pciAddress: "0000:00:04.0"}}]
  volumes: [{name: data, emptyDisk: {capacity: 1Gi}}]
`, "Attempted double use of PCI Address 0000:00:04.0"},
}

// TestKnownBugs checks that each of vmigen.KnownBugs is still a bug: its
// smallest VMI passes api.Validate and convert.Convert, and libvirt refuses
// the domain (define with VALIDATE). Once api or convert refuses it with
// the field's path, or converts it into a domain libvirt takes, the bug
// is fixed: take it off vmigen.KnownBugs (and out of here), and the
// generator draws it again.
//
//	go test ./testkit/vmigen/e2e -run TestKnownBugs -v
func TestKnownBugs(t *testing.T) {
	var names []string
	for name := range knownBugs {
		names = append(names, name)
	}
	slices.Sort(names)
	want := slices.Sorted(slices.Values(vmigen.KnownBugs))
	if !slices.Equal(names, want) {
		t.Fatalf("the cases here (%q) are not vmigen.KnownBugs (%q)", names, want)
	}
	hosttest.Libvirt(t, testURI)
	hosttest.LockLibvirt(t, false)
	conn, err := libvirt.NewConnect(testURI)
	if err != nil {
		hosttest.Missing(t, "libvirtd unreachable at %s: %v", testURI, err)
	}
	t.Cleanup(func() { _, _ = conn.Close() })
	opts := convert.KubeVirtOptions()
	opts.DomainType = "qemu"
	opts.HostFacts.Lacks = []convert.Lack{convert.LackSlotlessMaxMemory}
	opts.Layout = convert.HostLayout{StateDir: convert.DefaultStateDir, ImageStore: convert.DefaultImageStore}
	opts.HostDevices = map[string]convert.HostDevice{"vgpu": {MdevUUID: "4b20d080-1b54-4048-85b3-a6a62d165c01"}}
	for i, name := range names {
		bug := knownBugs[name]
		annotations := ""
		if strings.Contains(name, "placePCIDevicesOnRootComplex") {
			annotations = `, annotations: {kubevirt.io/placePCIDevicesOnRootComplex: "true"}`
		}
		doc := fmt.Sprintf("apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata: {name: bug%d-%d, namespace: %s%s}\nspec:\n  domain:\n    memory: {guest: 128Mi}\n%s",
			i, os.Getpid(), testNamespace, annotations, bug.spec)
		fixed := func(format string, args ...any) {
			t.Errorf("%s: %s: fixed? Take it off vmigen.KnownBugs.\n%s", name, fmt.Sprintf(format, args...), doc)
		}
		vmi, err := api.Decode([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, doc)
		}
		api.Default(vmi, api.ClusterConfig{})
		if errs := api.Validate(vmi); len(errs) > 0 {
			fixed("api refuses it: %v", errs)
			continue
		}
		d, err := convert.Convert(vmi, opts)
		if err != nil {
			fixed("convert refuses it: %v", err)
			continue
		}
		xml, err := domain.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		err = defineAndUndefine(t, conn, d.Name, string(xml))
		switch {
		case err == nil:
			fixed("libvirt defines its domain")
		case !strings.Contains(err.Error(), bug.libvirt):
			t.Errorf("%s: libvirt refuses it otherwise than %q: %v", name, bug.libvirt, err)
		}
	}
}
