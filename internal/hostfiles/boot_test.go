package hostfiles

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// needLibvirtForArtifacts skips unless virsh answers on qemu:///system and
// the test guest can be built; under CI their absence fails the test.
func needLibvirtForArtifacts(t *testing.T) {
	t.Helper()
	hosttest.Root(t)
	hosttest.Tools(t, "qemu-img")
	hosttest.Files(t, filepath.Join(testguest.DefaultKernelTree, "lib", "modules"))
	hosttest.Libvirt(t, "qemu:///system")
}

// TestArtifactsBootUnderLibvirt prepares the artifacts of a VMI booting the
// test guest (kernel boot from the image store, a containerDisk overlay, an
// empty disk, a NoCloud ISO), converts it with the host layout and starts
// it with plain virsh under emulation: QEMU, run by libvirt as its own
// user, must open every artifact, and the guest must see them.
func TestArtifactsBootUnderLibvirt(t *testing.T) {
	needLibvirtForArtifacts(t)
	root := hosttest.Dir(t, os.TempDir(), "artifacts-boot-")
	layout := convert.HostLayout{StateDir: filepath.Join(root, "vmis"), ImageStore: filepath.Join(root, "images")}
	guest, err := testguest.Install(layout.ImageStore, testguest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ref := testguest.Ref
	// The kernel-boot image is the store's (as the launcher resolves it);
	// the data disk's image is a folder filled by hand, which a layout
	// without Images for its reference still reads.
	layout.Images = map[string]convert.HostImage{ref: {Dir: guest.Dir}}
	const diskImage = "localhost/artifacts-test/data:1"
	imgDir := layout.ImageFolder(diskImage)
	os.MkdirAll(imgDir, 0o755)
	if out, err := exec.Command("qemu-img", "create", "-q", "-f", "raw", filepath.Join(imgDir, "disk.img"), "5M").CombinedOutput(); err != nil {
		t.Fatalf("%s %v", out, err)
	}
	os.Chmod(filepath.Join(imgDir, "disk.img"), 0o644)

	userData := "#cloud-config\n# artifacts boot test: <&'\">\n"
	vmi := artifactVMI(t, fmt.Sprintf(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: artifacts-boot, namespace: launcher-test}
spec:
  terminationGracePeriodSeconds: 0
  domain:
    cpu: {cores: 2}
    resources: {requests: {memory: 256Mi}}
    firmware:
      kernelBoot:
        kernelArgs: "%s %s"
        container: {image: "%s", kernelPath: %s, initrdPath: %s}
    devices:
      autoattachGraphicsDevice: false
      disks:
      - {name: data, serial: data-serial, disk: {bus: virtio}}
      - {name: scratch, serial: scratch-serial, disk: {bus: virtio}}
      - {name: cloudinit, disk: {bus: virtio}}
      interfaces:
      - {name: default, masquerade: {}, macAddress: "02:00:00:0a:0b:0c", model: virtio}
  networks:
  - {name: default, pod: {}}
  volumes:
  - {name: data, containerDisk: {image: "%s"}}
  - {name: scratch, emptyDisk: {capacity: 7Mi}}
  - name: cloudinit
    cloudInitNoCloud:
      userData: %q
`, testguest.KernelArgs, testguest.ActionPowerOff, ref, testguest.KernelPath, testguest.InitrdPath, diskImage, userData))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	qemu, err := QEMUUser("")
	if err != nil {
		t.Fatal(err)
	}
	host := hostplan.Host{Owner: "test", QEMU: qemu,
		Options: convert.Options{Layout: layout, DomainType: "qemu", SerialConsoleLog: true, HostFacts: convert.HostFacts{Lacks: []convert.Lack{convert.LackSlotlessMaxMemory}}}}
	req, err := hostplan.Prepare(vmi, host)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := hostplan.Make(req, host, hostplan.Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Apply(ctx, plan); err != nil {
		t.Fatal(err)
	}
	xml := plan.XML
	xmlPath := filepath.Join(root, "domain.xml")
	os.WriteFile(xmlPath, xml, 0o600)
	name := convert.DomainName(vmi)
	virsh := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, "virsh", append([]string{"-c", "qemu:///system"}, args...)...).CombinedOutput()
		return string(out), err
	}
	virsh("destroy", name)
	start := time.Now()
	if out, err := virsh("create", xmlPath); err != nil {
		t.Fatalf("virsh create: %s %v\n%s", out, err, xml)
	}
	t.Cleanup(func() { virsh("destroy", name) })
	for {
		if _, err := virsh("domstate", name); err != nil {
			break // transient domain gone: the guest powered off
		}
		if ctx.Err() != nil {
			t.Fatal("guest did not power off")
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("virsh create to power-off under TCG: %v", time.Since(start).Round(100*time.Millisecond))
	console, err := os.ReadFile(layout.Paths(vmi).SerialLog)
	if err != nil {
		t.Fatal(err)
	}
	r, err := testguest.ParseConsole(string(console))
	if err != nil {
		t.Fatalf("%v\n%s", err, console)
	}
	if r.CPUs != 2 {
		t.Errorf("cpus %d", r.CPUs)
	}
	if d := r.DiskBySerial("data-serial"); d == nil || d.Size != 5<<20 {
		t.Errorf("containerDisk: %+v in %+v", d, r.Disks)
	}
	if d := r.DiskBySerial("scratch-serial"); d == nil || d.Size != 7<<20 {
		t.Errorf("emptyDisk: %+v in %+v", d, r.Disks)
	}
	if len(r.NICs) != 1 || r.NICs[0].MAC != "02:00:00:0a:0b:0c" {
		t.Errorf("nics %+v", r.NICs)
	}
	if ud, ok := r.UserData(); !ok || ud != userData {
		t.Errorf("user-data %q", ud)
	}
	if err := removeArtifacts(vmi, layout); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(layout.StateFolder(vmi)); !os.IsNotExist(err) {
		t.Errorf("state folder still there: %v", err)
	}
}
