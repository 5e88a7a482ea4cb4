package hostplan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/pipeline"
)

// testHost is a host with its state folders under /srv.
func testHost() Host {
	return Host{Owner: "node01", Options: convert.Options{
		Layout:     convert.HostLayout{StateDir: "/srv/vmis", ImageStore: "/srv/images"},
		DomainType: "qemu", SerialConsoleLog: true,
	}, QEMU: &User{Name: "libvirt-qemu", UID: 64055, GID: 64055}}
}

// decodeVMI decodes a VMI for the tests.
func decodeVMI(t *testing.T, yaml string) *v1.VirtualMachineInstance {
	t.Helper()
	vmi, err := api.Decode([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return vmi
}

// webVMI has a containerDisk, an empty disk, NoCloud user data from a
// secret, a configMap, and a kernel boot.
const webVMI = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: web, namespace: shop, uid: 6e0f5a3c-0000-4000-8000-000000000001}
spec:
  terminationGracePeriodSeconds: 5
  domain:
    resources: {requests: {memory: 128Mi}}
    firmware:
      kernelBoot:
        kernelArgs: console=ttyS0
        container: {image: "localhost/kernel:1", kernelPath: /boot/vmlinuz, initrdPath: /boot/initrd.img}
    devices:
      disks:
      - {name: root, disk: {bus: virtio}}
      - {name: scratch, disk: {bus: virtio}}
      - {name: cloudinit, disk: {bus: virtio}}
      - {name: app, disk: {bus: virtio}}
  volumes:
  - {name: root, containerDisk: {image: "localhost/disk:1"}}
  - {name: scratch, emptyDisk: {capacity: 64Mi}}
  - {name: cloudinit, cloudInitNoCloud: {secretRef: {name: ud}}}
  - {name: app, configMap: {name: app}}
`

// webInputs are what a launcher would gather for webVMI.
func webInputs() Inputs {
	return Inputs{
		Images: map[string]Image{
			"spec.volumes[0].containerDisk.image":             {Reference: "localhost/disk:1", Digest: "sha256:d15c", Dir: "/srv/images/sha256/d15c/rootfs", Disk: "disk/disk.qcow2", DiskFormat: "qcow2"},
			"spec.domain.firmware.kernelBoot.container.image": {Reference: "localhost/kernel:1", Digest: "sha256:4e4e", Dir: "/srv/images/sha256/4e4e/rootfs"},
		},
		Sources: map[Source][]File{
			{Secret, "ud"}:     {{Path: "userdata", Data: []byte("#cloud-config\n")}},
			{ConfigMap, "app"}: {{Path: "b.conf", Data: []byte("b")}, {Path: "a.conf", Data: []byte("a")}},
		},
	}
}

// TestPrepareLists: Prepare lists the images (with their fields) and the
// config sources, each once, of an admitted copy of the VMI.
func TestPrepareLists(t *testing.T) {
	vmi := decodeVMI(t, webVMI)
	req, err := Prepare(vmi, testHost())
	if err != nil {
		t.Fatal(err)
	}
	if req.VMI == vmi || req.VMI.Spec.Domain.Firmware.UUID == "" || vmi.Spec.Domain.Firmware.UUID != "" {
		t.Errorf("the request's VMI is not a defaulted copy")
	}
	var images []string
	for _, r := range req.Images {
		images = append(images, r.Field.String()+"="+r.Reference)
	}
	if got := strings.Join(images, " "); got != "spec.volumes[0].containerDisk.image=localhost/disk:1 spec.domain.firmware.kernelBoot.container.image=localhost/kernel:1" {
		t.Errorf("images %s", got)
	}
	var sources []string
	for _, s := range req.Sources {
		sources = append(sources, string(s.Kind)+"/"+s.Name+"@"+s.Field.String())
	}
	if got := strings.Join(sources, " "); got != "secret/ud@spec.volumes[2].cloudInitNoCloud.secretRef.name configMap/app@spec.volumes[3].configMap.name" {
		t.Errorf("sources %s", got)
	}
}

// TestMakeRunsThePipelineOnce: a plan is one admission, one conversion and
// one marshal, whatever the VMI asks of the host.
func TestMakeRunsThePipelineOnce(t *testing.T) {
	counts := map[string]int{}
	defer func(a, c, m any) {
		admit, convertVMI, marshal = a.(func(*v1.VirtualMachineInstance, pipeline.Config) (*v1.VirtualMachineInstance, error)),
			c.(func(*v1.VirtualMachineInstance, pipeline.Config) (*libvirtxml.Domain, error)), m.(func(*libvirtxml.Domain) ([]byte, error))
	}(admit, convertVMI, marshal)
	realAdmit, realConvert, realMarshal := admit, convertVMI, marshal
	admit = func(v *v1.VirtualMachineInstance, c pipeline.Config) (*v1.VirtualMachineInstance, error) {
		counts["admit"]++
		return realAdmit(v, c)
	}
	convertVMI = func(v *v1.VirtualMachineInstance, c pipeline.Config) (*libvirtxml.Domain, error) {
		counts["convert"]++
		return realConvert(v, c)
	}
	marshal = func(d *libvirtxml.Domain) ([]byte, error) {
		counts["marshal"]++
		return realMarshal(d)
	}
	req, err := Prepare(decodeVMI(t, webVMI), testHost())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Make(req, testHost(), webInputs()); err != nil {
		t.Fatal(err)
	}
	if counts["admit"] != 1 || counts["convert"] != 1 || counts["marshal"] != 1 {
		t.Errorf("one plan ran admit, convert and marshal %d, %d and %d times, want once each", counts["admit"], counts["convert"], counts["marshal"])
	}
}

// TestMakeXML: the plan's XML is the canonical XML of its domain, marks
// included (as libvirtxml itself writes it), its hash that of the XML
// without metadata, and the marks name the owner, the VMI with its grace
// period, and the images by digest.
func TestMakeXML(t *testing.T) {
	host := testHost()
	req, err := Prepare(decodeVMI(t, webVMI), host)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Make(req, host, webInputs())
	if err != nil {
		t.Fatal(err)
	}
	want, err := p.Domain.Marshal() // libvirtxml's own writer, metadata and all
	if err != nil {
		t.Fatal(err)
	}
	if string(p.XML) != want+"\n" {
		t.Errorf("plan XML differs from its domain's:\n%s\n---\n%s", p.XML, want)
	}
	bare, err := domain.WithoutMetadata(p.XML)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(bare)
	if p.Hash != hex.EncodeToString(sum[:]) || p.Marks.Hash != p.Hash {
		t.Errorf("hash %s (marks %s), want %x", p.Hash, p.Marks.Hash, sum)
	}
	m, err := MarksOf(p.Domain)
	if err != nil || m == nil {
		t.Fatalf("marks of the plan's domain: %v %v", m, err)
	}
	if m.Owner != "node01" || m.VMI != (VMIRef{Namespace: "shop", Name: "web", UID: "6e0f5a3c-0000-4000-8000-000000000001", Grace: 5}) || m.Hash != p.Hash || m.Ran() {
		t.Errorf("marks %+v", m)
	}
	if len(m.Images) != 2 || m.Images[0] != (ImageUse{Field: "spec.volumes[0].containerDisk.image", Volume: "root", Ref: "localhost/disk:1", Digest: "sha256:d15c"}) ||
		m.Images[1] != (ImageUse{Field: "spec.domain.firmware.kernelBoot.container.image", Ref: "localhost/kernel:1", Digest: "sha256:4e4e"}) {
		t.Errorf("images %+v", m.Images)
	}
	if d := p.Domain.OS; d == nil || d.Kernel != "/srv/images/sha256/4e4e/rootfs/boot/vmlinuz" {
		t.Errorf("the kernel is not the resolved image's: %+v", d)
	}
	// Marks with a run: the same XML but for the metadata.
	run := p.Marks.WithRun(&Marks{Started: &Started{}})
	withRun, err := p.XMLWith(run)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := domain.WithoutMetadata(withRun); !bytes.Equal(again, bare) || bytes.Equal(withRun, p.XML) {
		t.Errorf("XMLWith changed more than the metadata, or nothing")
	}
}

// TestMakeIsDeterministic: the same request, host and inputs give the same
// plan, byte for byte, and the request is not changed.
func TestMakeIsDeterministic(t *testing.T) {
	host := testHost()
	req, err := Prepare(decodeVMI(t, webVMI), host)
	if err != nil {
		t.Fatal(err)
	}
	before := req.VMI.DeepCopy()
	a, err := Make(req, host, webInputs())
	if err != nil {
		t.Fatal(err)
	}
	b, err := Make(req, host, webInputs())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.XML, b.XML) || a.Hash != b.Hash || len(a.Artifacts) != len(b.Artifacts) {
		t.Fatal("two plans of the same inputs differ")
	}
	for i := range a.Artifacts {
		if a.Artifacts[i].String() != b.Artifacts[i].String() || !bytes.Equal(a.Artifacts[i].Content, b.Artifacts[i].Content) {
			t.Errorf("artifact %d: %s / %s", i, a.Artifacts[i], b.Artifacts[i])
		}
	}
	if !equalVMI(before, req.VMI) {
		t.Error("Make changed the request's VMI")
	}
}

func equalVMI(a, b *v1.VirtualMachineInstance) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestMakeArtifacts: every artifact of webVMI, in order, with its action,
// path, mode and what it backs; the ISOs hold the sources' files.
func TestMakeArtifacts(t *testing.T) {
	host := testHost()
	req, err := Prepare(decodeVMI(t, webVMI), host)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Make(req, host, webInputs())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range p.Artifacts {
		got = append(got, a.String())
	}
	want := []string{
		"create stateDir /srv/vmis 0711",
		"create stateFolder /srv/vmis/shop_web 0700",
		"create folder /srv/vmis/shop_web/disks 0711",
		"create overlay /srv/vmis/shop_web/disks/root.qcow2 0600 over /srv/images/sha256/d15c/rootfs/disk/disk.qcow2 (qcow2) (volume root)",
		"create emptyDisk /srv/vmis/shop_web/disks/scratch.qcow2 0600 67108864 bytes (volume scratch)",
		"create folder /srv/vmis/shop_web/cloud-init 0711",
		"write cloudInitNoCloud /srv/vmis/shop_web/cloud-init/nocloud.iso 0600 " + itoa(len(p.Artifacts[6].Content)) + " bytes (volume cloudinit)",
		"create folder /srv/vmis/shop_web/config 0711",
		"write configISO /srv/vmis/shop_web/config/app.iso 0600 " + itoa(len(p.Artifacts[8].Content)) + " bytes (volume app)",
		"check imageFolder /srv/images/sha256/4e4e/rootfs",
		"check kernelFile /srv/images/sha256/4e4e/rootfs/boot/vmlinuz",
		"check kernelFile /srv/images/sha256/4e4e/rootfs/boot/initrd.img",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("artifacts:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if o := p.Artifacts[1].Owner; o == nil || o.UID != 64055 {
		t.Errorf("state folder owner %+v, want QEMU's", o)
	}
	if p.StateFolder != "/srv/vmis/shop_web" {
		t.Errorf("state folder %s", p.StateFolder)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestMakeRefusals: what the plan refuses, each at its field: a source
// the host has no folder for, a secret without the user data, a socket
// path too long; the host's lack is ErrNotReady, the VMI's fault an
// *InvalidError.
func TestMakeRefusals(t *testing.T) {
	host := testHost()
	for _, c := range []struct {
		name     string
		edit     func(in *Inputs, h *Host)
		field    string
		notReady bool
	}{
		{"no folder for the configMap", func(in *Inputs, _ *Host) { delete(in.Sources, Source{ConfigMap, "app"}) }, "spec.volumes[3].configMap.name", false},
		{"no folder for the secret", func(in *Inputs, _ *Host) { delete(in.Sources, Source{Secret, "ud"}) }, "spec.volumes[2].cloudInitNoCloud.secretRef.name", false},
		{"secret without user data", func(in *Inputs, _ *Host) { in.Sources[Source{Secret, "ud"}] = []File{{Path: "other"}} }, "spec.volumes[2].cloudInitNoCloud.secretRef.name", true},
		{"socket path too long", func(_ *Inputs, h *Host) {
			h.Options.Layout = convert.HostLayout{StateDir: "/srv/" + strings.Repeat("v", 100), ImageStore: "/srv/images"}
		}, "metadata.name", false},
	} {
		h := host
		req, err := Prepare(decodeVMI(t, webVMI), h)
		if err != nil {
			t.Fatal(err)
		}
		in := webInputs()
		c.edit(&in, &h)
		_, err = Make(req, h, in)
		var fe *field.Error
		var invalid *pipeline.InvalidError
		switch {
		case !errors.As(err, &fe) || fe.Field != c.field:
			t.Errorf("%s: %v, want a field error on %s", c.name, err, c.field)
		case errors.Is(err, ErrNotReady) != c.notReady:
			t.Errorf("%s: ErrNotReady is %t, want %t: %v", c.name, !c.notReady, c.notReady, err)
		case !c.notReady && !errors.As(err, &invalid):
			t.Errorf("%s: not an *InvalidError: %v", c.name, err)
		}
	}
}
