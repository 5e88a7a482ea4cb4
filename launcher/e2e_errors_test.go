package launcher_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/launcher"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// classes are the error classes a reconciler branches on.
var classes = map[string]error{
	"ErrInvalid":      launcher.ErrInvalid,
	"ErrHostNotReady": launcher.ErrHostNotReady,
	"ErrUnavailable":  launcher.ErrUnavailable,
	"ErrConflict":     launcher.ErrConflict,
}

// classOf names the one class err is, or says it is several or none.
func classOf(err error) string {
	var in []string
	for name, class := range classes {
		if errors.Is(err, class) {
			in = append(in, name)
		}
	}
	switch len(in) {
	case 0:
		return "no class"
	case 1:
		return in[0]
	}
	return "several classes: " + strings.Join(in, ", ")
}

// TestE2EErrorClasses pins, on the real libvirtd, the class of what Sync
// and New return for each kind of trouble, and checks that nothing is
// left on the host when a VMI is refused.
func TestE2EErrorClasses(t *testing.T) {
	e := newEnvWith(t, func(c *launcher.Config) {
		c.Layout.HostDiskAllow = []string{filepath.Join(testRoot, "allowed")}
	})
	ctx := func() context.Context { return ctxFor(t, time.Minute) }

	// The converter refuses this VMI on three counts, all reported at
	// once; none of them is a validation error.
	refused := decodeVMI(t, `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: `+uniqueName("e2e-refused")+`, namespace: `+testNamespace+`}
spec:
  domain:
    memory: {guest: 128Mi}
    devices:
      gpus:
      - {name: gpu1, deviceName: nvidia.com/GP102}
      disks:
      - {name: scratch, disk: {bus: virtio}}
      interfaces:
      - {name: blue, bridge: {}}
  networks:
  - {name: blue, multus: {networkName: blue-net}}
  volumes:
  - {name: scratch, hostDisk: {path: /etc/scratch.img, type: DiskOrCreate, capacity: 1Gi}}
`)
	invalid := guestVMI(t, uniqueName("e2e-badbus"), 30, testguest.ActionACPI)
	invalid.Spec.Domain.Devices.Disks = []v1.Disk{{Name: "d", DiskDevice: v1.DiskDevice{Disk: &v1.DiskTarget{Bus: "floppy"}}}}
	invalid.Spec.Volumes = []v1.Volume{{Name: "d", VolumeSource: v1.VolumeSource{EmptyDisk: &v1.EmptyDiskSource{Capacity: mustQuantity(t, "1Gi")}}}}
	missingImage := decodeVMI(t, `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: `+uniqueName("e2e-noimage")+`, namespace: `+testNamespace+`}
spec:
  domain:
    memory: {guest: 128Mi}
    devices:
      disks:
      - {name: root, disk: {bus: virtio}}
  volumes:
  - {name: root, containerDisk: {image: example.org/not/pulled:1.0}}
`)
	notOurs := guestVMI(t, uniqueName("e2e-notours"), 30, testguest.ActionACPI)
	// A domain of that name that no launcher defined.
	foreign := fmt.Sprintf(`<domain type="qemu"><name>%s</name><memory unit="MiB">64</memory><os><type arch="x86_64" machine="q35">hvm</type></os></domain>`, domainName(notOurs))
	dom, err := e.conn.DomainDefineXML(foreign)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dom.Undefine(); _ = dom.Free() })

	for _, c := range []struct {
		name   string
		vmi    *v1.VirtualMachineInstance
		class  string
		fields []string // the field errors, in order
	}{
		{"validation", invalid, "ErrInvalid", []string{"spec.domain.devices.disks[0].disk.bus"}},
		{"converter", refused, "ErrInvalid", []string{"spec.volumes[0].hostDisk.path", "spec.networks[0].multus.networkName", "spec.domain.devices.gpus[0]"}},
		{"image not in the store", missingImage, "ErrHostNotReady", []string{"spec.volumes[0].containerDisk.image"}},
		{"foreign domain", notOurs, "ErrConflict", nil},
	} {
		err := e.l.Sync(ctx(), c.vmi)
		t.Logf("%s: %v", c.name, err)
		if got := classOf(err); got != c.class {
			t.Errorf("%s: %s, want %s: %v", c.name, got, c.class, err)
		}
		var got []string
		var ie *launcher.InvalidError
		if errors.As(err, &ie) {
			for _, fe := range ie.Errors {
				got = append(got, fe.Field)
			}
		} else {
			var fe *field.Error
			if errors.As(err, &fe) {
				got = append(got, fe.Field)
			}
		}
		if c.fields != nil && strings.Join(got, " ") != strings.Join(c.fields, " ") {
			t.Errorf("%s: field errors %v, want %v", c.name, got, c.fields)
		}
		if _, serr := os.Stat(e.layout.StateFolder(c.vmi.DeepCopy())); !errors.Is(serr, os.ErrNotExist) {
			t.Errorf("%s: the refused VMI left its state folder (%v)", c.name, serr)
		}
	}
	if _, err := os.Stat("/etc/scratch.img"); err == nil {
		t.Error("the refused hostDisk was created")
	}
	if xml, err := dom.GetXMLDesc(0); err != nil || strings.Contains(xml, "<metadata") {
		t.Errorf("the foreign domain was changed: %v\n%s", err, xml)
	}

	// No libvirtd behind the URI.
	_, err = launcher.New(ctx(), launcher.Config{URI: "qemu:///system?socket=/nonexistent/libvirt-sock", Emulate: true})
	if got := classOf(err); got != "ErrUnavailable" {
		t.Errorf("New without libvirtd: %s, want ErrUnavailable: %v", got, err)
	}
}

func mustQuantity(t *testing.T, s string) resource.Quantity {
	t.Helper()
	q, err := resource.ParseQuantity(s)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// TestE2ESocketPathTooLong: a VMI whose name makes its serial console's
// and VNC's socket paths longer than a UNIX socket path can be is refused while
// planning, naming metadata.name, and nothing is defined; libvirt would
// define it and fail only when starting it.
func TestE2ESocketPathTooLong(t *testing.T) {
	e := newEnv(t)
	name := uniqueName("e2e-long-" + strings.Repeat("x", 40))
	vmi := guestVMI(t, name, 0, testguest.ActionPowerOff)
	if n := len(e.layout.Paths(vmi).SerialSocket); n <= 107 {
		t.Fatalf("the serial socket path is %d bytes: the test needs a longer name", n)
	}
	err := e.l.Sync(ctxFor(t, time.Minute), vmi)
	var invalid *launcher.InvalidError
	if !errors.As(err, &invalid) || len(invalid.Errors) != 2 {
		t.Fatalf("Sync: %v, want an InvalidError on metadata.name for the serial console's and VNC's sockets", err)
	}
	for i, what := range []string{"serial console", "VNC"} {
		if fe := invalid.Errors[i]; fe.Field != "metadata.name" || !strings.Contains(fe.Detail, "the "+what+" socket ") {
			t.Errorf("error %d: %v, want one on metadata.name for the %s socket", i, fe, what)
		}
	}
	if _, err := e.conn.LookupDomainByName(domainName(vmi)); err == nil {
		t.Error("the refused VMI's domain is defined")
	}
	if n := launcher.HeldImages(e.l); n != 0 {
		t.Errorf("the refused Sync left %d images held from PruneImages, want none", n)
	}
}
