package convert_test

// Hostile strings and paths (issue 4, part 3): a tenant's VMI carries XML
// specials, quotes, newlines, NUL, "..", absolute paths and 64 KiB values
// in the strings the pipeline passes on. Each must be refused with
// an error naming a field path, or become XML that is well-formed, valid
// by libvirt's schema and says exactly what the VMI said; in the host layout no path of the domain or of
// HostLayout.Artifacts may leave the VMI's state folder or the image store,
// except a hostDisk under a folder of HostLayout.HostDiskAllow (or a claim
// the embedder mapped). Expected outcomes are the rules above, not
// KubeVirt's output: KubeVirt has no host layout.

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/golden"
)

// hostileBase is the VMI each case changes in one place: a containerDisk,
// a disk with a serial, a hostDisk, a claim, cloud-init user-data, kernel
// boot from the image store, a multus network beside the pod network, and
// named devices (a tablet, a watchdog, a sound card).
const hostileBase = `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: hostile
  namespace: tenant
  labels: {app: web}
  annotations: {note: plain}
spec:
  domain:
    firmware:
      serial: FW-SERIAL
      kernelBoot:
        kernelArgs: console=ttyS0
        container:
          image: registry.example/boot:1
          kernelPath: /boot/vmlinuz
          initrdPath: /boot/initrd.img
    devices:
      disks:
      - {name: root, serial: ROOT-SERIAL, disk: {bus: virtio}}
      - {name: host, disk: {bus: virtio}}
      - {name: claim, disk: {bus: virtio}}
      - {name: ci, disk: {bus: virtio}}
      interfaces:
      - {name: default, masquerade: {}}
      - {name: blue, bridge: {}}
      inputs:
      - {name: tablet, type: tablet, bus: usb}
      watchdog: {name: wd, i6300esb: {}}
      sound: {name: snd, model: ich9}
    resources: {requests: {memory: 128Mi}}
  networks:
  - {name: default, pod: {}}
  - {name: blue, multus: {networkName: blue-net}}
  volumes:
  - name: root
    containerDisk: {image: registry.example/root:1, path: /disk/root.img}
  - name: host
    hostDisk: {path: /srv/vms/tenant/host.img, type: Disk}
  - name: claim
    persistentVolumeClaim: {claimName: data}
  - name: ci
    cloudInitNoCloud: {userData: "#cloud-config\n"}
`

// hostileLayout is the host layout of the cases; the hostile value is also
// a mapped claim and network name, so that a lookup by it succeeds.
func hostileLayout(value string) convert.HostLayout {
	return convert.HostLayout{
		StateDir:      "/var/lib/vmi2libvirt/vmis",
		ImageStore:    "/var/lib/vmi2libvirt/images",
		HostDiskAllow: []string{"/srv/vms"},
		Networks: map[string]convert.InterfaceAttachment{
			"blue-net": {Type: "bridge", Source: "br-blue"},
			value:      {Type: "bridge", Source: "br-hostile"},
		},
		Claims: map[string]convert.DiskSource{
			"data": {Path: "/srv/claims/data.img"},
			value:  {Path: "/srv/claims/hostile.img"},
		},
	}
}

// hostileValues are the strings put in each field.
var hostileValues = map[string]string{
	"xml specials":     `a<b>&c"d'e`,
	"cdata end":        `x]]><evil/>`,
	"entity":           `&amp;&lt;&#0;&#x1F;`,
	"quotes":           `"'"'` + "`",
	"newline":          "line1\nline2\r\n",
	"tab":              "a\tb",
	"nul":              "a\x00b",
	"control":          "a\x01\x1b[31mb",
	"invalid utf8":     "a\xffb",
	"dotdot":           "..",
	"dotdot path":      "../../../../etc/shadow",
	"inner dotdot":     "/srv/vms/../../etc/shadow",
	"absolute":         "/etc/shadow",
	"dev":              "/dev/sda",
	"slash":            "a/b",
	"dot":              ".",
	"empty":            "",
	"long":             strings.Repeat("x", 64<<10),
	"long specials":    strings.Repeat(`<&"'>`, (64<<10)/5),
	"long path":        "/srv/vms/" + strings.Repeat("d/", 32<<10),
	"unicode":          "é\u2028\u202e\ufeff",
	"percent":          "%2e%2e%2f%00",
	"hostdisk allowed": "/srv/vms/tenant/other.img",
}

// hostileField is one string of the VMI: how to set it, and how to read it
// back from the domain when the domain must carry it (nil: it must not
// appear as such, e.g. a path the layout computes).
type hostileField struct {
	path string
	set  func(vmi *v1.VirtualMachineInstance, s string)
	get  func(d *libvirtxml.Domain, s string) (got, want string)
	// hostOnly: get applies to the host layout only (the KubeVirt layout
	// puts the file at its pod path).
	hostOnly bool
}

func diskByAlias(d *libvirtxml.Domain, name string) *libvirtxml.DomainDisk {
	for i := range d.Devices.Disks {
		if a := d.Devices.Disks[i].Alias; a != nil && a.Name == "ua-"+name {
			return &d.Devices.Disks[i]
		}
	}
	return nil
}

func sysinfoEntry(d *libvirtxml.Domain, name string) string {
	for _, si := range d.SysInfo {
		if si.SMBIOS == nil || si.SMBIOS.System == nil {
			continue
		}
		for _, e := range si.SMBIOS.System.Entry {
			if e.Name == name {
				return e.Value
			}
		}
	}
	return "<no " + name + " entry>"
}

var hostileFields = []hostileField{
	{path: "metadata.name", set: func(v *v1.VirtualMachineInstance, s string) { v.Name = s },
		get: func(d *libvirtxml.Domain, s string) (string, string) { return d.Name, "tenant_" + s }},
	{path: "metadata.namespace", set: func(v *v1.VirtualMachineInstance, s string) { v.Namespace = s },
		get: func(d *libvirtxml.Domain, s string) (string, string) {
			if s == "" {
				s = "default" // api.Default's namespace
			}
			return d.Name, s + "_hostile"
		}},
	{path: "metadata.labels", set: func(v *v1.VirtualMachineInstance, s string) { v.Labels = map[string]string{"app": s, s: "v"} }},
	{path: "metadata.annotations", set: func(v *v1.VirtualMachineInstance, s string) {
		v.Annotations = map[string]string{"note": s, "x/" + s: s}
	}},
	{path: "disk serial", set: func(v *v1.VirtualMachineInstance, s string) { v.Spec.Domain.Devices.Disks[0].Serial = s },
		get: func(d *libvirtxml.Domain, s string) (string, string) { return diskByAlias(d, "root").Serial, s }},
	{path: "firmware serial", set: func(v *v1.VirtualMachineInstance, s string) { v.Spec.Domain.Firmware.Serial = s },
		get: func(d *libvirtxml.Domain, s string) (string, string) {
			if s == "" {
				return "", "" // no serial, no entry
			}
			return sysinfoEntry(d, "serial"), s
		}},
	{path: "kernelArgs", set: func(v *v1.VirtualMachineInstance, s string) { v.Spec.Domain.Firmware.KernelBoot.KernelArgs = s },
		get: func(d *libvirtxml.Domain, s string) (string, string) { return d.OS.Cmdline, s }},
	{path: "user-data", set: func(v *v1.VirtualMachineInstance, s string) {
		v.Spec.Volumes[3].CloudInitNoCloud.UserData = userDataMarker + s
	}},
	{path: "containerDisk image", set: func(v *v1.VirtualMachineInstance, s string) { v.Spec.Volumes[0].ContainerDisk.Image = s }},
	{path: "containerDisk path", set: func(v *v1.VirtualMachineInstance, s string) { v.Spec.Volumes[0].ContainerDisk.Path = s }},
	{path: "hostDisk path", set: func(v *v1.VirtualMachineInstance, s string) { v.Spec.Volumes[1].HostDisk.Path = s },
		get: func(d *libvirtxml.Domain, s string) (string, string) {
			return diskByAlias(d, "host").Source.File.File, filepath.Clean(s)
		}, hostOnly: true},
	{path: "kernel image", set: func(v *v1.VirtualMachineInstance, s string) { v.Spec.Domain.Firmware.KernelBoot.Container.Image = s }},
	{path: "kernelPath", set: func(v *v1.VirtualMachineInstance, s string) {
		v.Spec.Domain.Firmware.KernelBoot.Container.KernelPath = s
	}},
	{path: "initrdPath", set: func(v *v1.VirtualMachineInstance, s string) {
		v.Spec.Domain.Firmware.KernelBoot.Container.InitrdPath = s
	}},
	{path: "claimName", set: func(v *v1.VirtualMachineInstance, s string) { v.Spec.Volumes[2].PersistentVolumeClaim.ClaimName = s },
		get: func(d *libvirtxml.Domain, s string) (string, string) {
			return diskByAlias(d, "claim").Source.File.File, "/srv/claims/hostile.img"
		}},
	{path: "multus networkName", set: func(v *v1.VirtualMachineInstance, s string) { v.Spec.Networks[1].Multus.NetworkName = s }},
	{path: "network name", set: func(v *v1.VirtualMachineInstance, s string) {
		v.Spec.Networks[1].Name = s
		v.Spec.Domain.Devices.Interfaces[1].Name = s
	}, get: func(d *libvirtxml.Domain, s string) (string, string) {
		return d.Devices.Interfaces[len(d.Devices.Interfaces)-1].Alias.Name, "ua-" + s
	}},
	{path: "volume and disk name", set: func(v *v1.VirtualMachineInstance, s string) {
		v.Spec.Volumes[0].Name = s
		v.Spec.Domain.Devices.Disks[0].Name = s
	}, get: func(d *libvirtxml.Domain, s string) (string, string) {
		return d.Devices.Disks[0].Alias.Name, "ua-" + s
	}},
	{path: "cpu model", set: func(v *v1.VirtualMachineInstance, s string) { v.Spec.Domain.CPU = &v1.CPU{Model: s} },
		get: func(d *libvirtxml.Domain, s string) (string, string) {
			if s == "" {
				return d.CPU.Mode, "host-model" // api.Default's model
			}
			if d.CPU == nil || d.CPU.Model == nil {
				return d.CPU.Mode, s
			}
			return d.CPU.Model.Value, s
		}, hostOnly: true},
	{path: "cpu feature", set: func(v *v1.VirtualMachineInstance, s string) {
		v.Spec.Domain.CPU = &v1.CPU{Model: "Haswell", Features: []v1.CPUFeature{{Name: s, Policy: "require"}}}
	}, get: func(d *libvirtxml.Domain, s string) (string, string) {
		for _, f := range d.CPU.Features {
			if f.Policy == "require" {
				return f.Name, s
			}
		}
		return "<none>", s
	}},
	{path: "chassis serial", set: func(v *v1.VirtualMachineInstance, s string) { v.Spec.Domain.Chassis = &v1.Chassis{Serial: s} },
		get: func(d *libvirtxml.Domain, s string) (string, string) {
			for _, si := range d.SysInfo {
				if si.SMBIOS != nil && si.SMBIOS.Chassis != nil {
					for _, e := range si.SMBIOS.Chassis.Entry {
						if e.Name == "serial" {
							return e.Value, s
						}
					}
				}
			}
			if s == "" {
				return "", "" // no serial, no entry
			}
			return "<no chassis serial>", s
		}},
	{path: "chassis manufacturer", set: func(v *v1.VirtualMachineInstance, s string) { v.Spec.Domain.Chassis = &v1.Chassis{Manufacturer: s} }},
	{path: "machine type", set: func(v *v1.VirtualMachineInstance, s string) { v.Spec.Domain.Machine = &v1.Machine{Type: s} },
		get: func(d *libvirtxml.Domain, s string) (string, string) {
			if s == "" {
				return "", "" // the default machine
			}
			return d.OS.Type.Machine, s
		}},
	{path: "firmware uuid", set: func(v *v1.VirtualMachineInstance, s string) { v.Spec.Domain.Firmware.UUID = types.UID(s) }},
	{path: "interface model", set: func(v *v1.VirtualMachineInstance, s string) { v.Spec.Domain.Devices.Interfaces[0].Model = s }},
	{path: "hostname", set: func(v *v1.VirtualMachineInstance, s string) { v.Spec.Hostname = s }},
	{path: "input name", set: func(v *v1.VirtualMachineInstance, s string) { v.Spec.Domain.Devices.Inputs[0].Name = s },
		get: func(d *libvirtxml.Domain, s string) (string, string) {
			return d.Devices.Inputs[0].Alias.Name, "ua-" + s
		}},
	{path: "watchdog name", set: func(v *v1.VirtualMachineInstance, s string) { v.Spec.Domain.Devices.Watchdog.Name = s },
		get: func(d *libvirtxml.Domain, s string) (string, string) {
			return d.Devices.Watchdogs[0].Alias.Name, "ua-" + s
		}},
	{path: "sound name", set: func(v *v1.VirtualMachineInstance, s string) { v.Spec.Domain.Devices.Sound.Name = s },
		get: func(d *libvirtxml.Domain, s string) (string, string) {
			return d.Devices.Sounds[0].Alias.Name, "ua-" + s
		}},
	{path: "MAC address", set: func(v *v1.VirtualMachineInstance, s string) { v.Spec.Domain.Devices.Interfaces[0].MacAddress = s },
		get: func(d *libvirtxml.Domain, s string) (string, string) {
			if d.Devices.Interfaces[0].MAC == nil {
				return "", s
			}
			return d.Devices.Interfaces[0].MAC.Address, s
		}},
}

// userDataMarker starts the hostile user-data: it must appear in neither
// the domain nor an error.
const userDataMarker = "USERDATA-MARKER-5e1f"

// TestHostileStrings runs every hostile value through every field of the
// VMI, in the host and the KubeVirt layout.
func TestHostileStrings(t *testing.T) {
	base, err := api.Decode([]byte(hostileBase))
	if err != nil {
		t.Fatal(err)
	}
	// The path walk sees every kind of path of the base VMI.
	opts := convert.KubeVirtOptions()
	opts.Layout = hostileLayout("x")
	d, _, err := hostilePipeline(base.DeepCopy(), opts)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, p := range domainPaths(d) {
		kinds = append(kinds, p.where)
	}
	if got, want := strings.Join(kinds, " "), "kernel initrd disk disk disk disk serial socket serial log vnc socket"; got != want {
		t.Errorf("paths of the base VMI: %s, want %s", got, want)
	}
	refused, converted := 0, 0
	for _, f := range hostileFields {
		for vname, value := range hostileValues {
			for _, layout := range []string{"host", "kubevirt"} {
				name := f.path + "/" + vname + "/" + layout
				vmi := base.DeepCopy()
				f.set(vmi, value)
				opts := convert.KubeVirtOptions()
				opts.DomainType = "qemu"
				host := hostileLayout(value)
				if layout == "host" {
					opts.Layout = host
				}
				d, raw, err := hostilePipeline(vmi, opts)
				if err != nil && strings.Contains(err.Error(), userDataMarker) {
					t.Errorf("%s: the error shows user-data: %.200s", name, err)
				}
				if bytes.Contains(raw, []byte(userDataMarker)) {
					t.Errorf("%s: the domain shows user-data", name)
				}
				if err != nil {
					checkFieldError(t, name, err)
					refused++
					continue
				}
				converted++
				golden.CheckSchemaBytes(t, fmt.Sprintf("hostile-%d", converted), raw)
				got := checkXML(t, name, raw)
				if got == nil {
					continue
				}
				if f.get != nil && (layout == "host" || !f.hostOnly) {
					// JSON, the VMI's wire form, carries invalid UTF-8
					// as U+FFFD: that is what the VMI says.
					value := strings.ToValidUTF8(value, "\uFFFD")
					// Read the value from the domain as libvirt will.
					if g, w := f.get(got, value); g != w {
						t.Errorf("%s: domain says %.80q, VMI said %.80q", name, g, w)
					}
					if g, w := f.get(d, value); g != w {
						t.Errorf("%s: converter's domain says %.80q, VMI said %.80q", name, g, w)
					}
				}
				if layout == "host" {
					checkHostPaths(t, name, vmi, host, got, opts)
				}
			}
		}
	}
	t.Logf("%d refused with a field path, %d converted to well-formed XML", refused, converted)
}

// hostilePipeline runs what examples/convert runs, from JSON (YAML cannot
// hold every value): Decode, Default, Validate, Convert, Marshal. A panic
// is a test failure, reported with the value.
func hostilePipeline(vmi *v1.VirtualMachineInstance, opts convert.Options) (d *libvirtxml.Domain, raw []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("PANIC: %v", r)
		}
	}()
	js, err := json.Marshal(vmi)
	if err != nil {
		return nil, nil, err
	}
	v, err := api.Decode(js)
	if err != nil {
		return nil, nil, err
	}
	api.Default(v, api.ClusterConfig{})
	if errs := api.Validate(v); len(errs) > 0 {
		return nil, nil, errs.ToAggregate()
	}
	d, err = convert.Convert(v, opts)
	if err != nil {
		return nil, nil, err
	}
	raw, err = domain.Marshal(d)
	return d, raw, err
}

// checkFieldError fails unless every error in err names a field path of
// the VMI (metadata. or spec.).
func checkFieldError(t *testing.T, name string, err error) {
	t.Helper()
	msg := err.Error()
	if strings.HasPrefix(msg, "PANIC") {
		t.Errorf("%s: %.300s", name, msg)
		return
	}
	errs := []error{err}
	var agg interface{ Errors() []error }
	if errors.As(err, &agg) {
		errs = agg.Errors()
	}
	for _, e := range errs {
		var fe *field.Error
		if !errors.As(e, &fe) {
			t.Errorf("%s: error without a field path: %.300s", name, e)
			continue
		}
		if !strings.HasPrefix(fe.Field, "spec.") && !strings.HasPrefix(fe.Field, "metadata.") {
			t.Errorf("%s: error on field %q, want a VMI field path: %.300s", name, fe.Field, e)
		}
	}
}

// checkXML checks that raw is well-formed XML, that domain.Unmarshal reads
// it and domain.Marshal writes it back byte for byte, and returns what was
// read.
func checkXML(t *testing.T, name string, raw []byte) *libvirtxml.Domain {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(raw))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Errorf("%s: XML not well-formed: %v", name, err)
			return nil
		}
	}
	got, err := domain.Unmarshal(raw)
	if err != nil {
		t.Errorf("%s: unmarshal: %v", name, err)
		return nil
	}
	again, err := domain.Marshal(got)
	if err != nil || !bytes.Equal(again, raw) {
		t.Errorf("%s: XML does not round-trip (err %v)", name, err)
	}
	return got
}

// within tells whether p lies inside dir, by filepath.Rel.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../") && filepath.IsAbs(p)
}

// checkHostPaths checks every file path of the domain and of the layout's
// artifacts: inside the VMI's state folder or the image store, or a
// hostDisk under HostDiskAllow, or a claim's mapped path, or firmware the
// options name.
func checkHostPaths(t *testing.T, name string, vmi *v1.VirtualMachineInstance, l convert.HostLayout, d *libvirtxml.Domain, opts convert.Options) {
	t.Helper()
	v := vmi.DeepCopy()
	api.Default(v, api.ClusterConfig{})
	state := l.StateFolder(v)
	if !within(l.StateDir, state) || filepath.Dir(state) != l.StateDir {
		t.Errorf("%s: state folder %.200q is not a folder of %s", name, state, l.StateDir)
	}
	exact := map[string]bool{}
	for _, c := range l.Claims {
		exact[c.Path] = true
	}
	for _, p := range []string{opts.EFI.Code, opts.EFI.Vars, opts.EFI.SecureBootCode, opts.EFI.SecureBootVars} {
		exact[p] = true
	}
	ok := func(p string, hostDisk bool) bool {
		if exact[p] || within(state, p) || within(l.ImageStore, p) {
			return true
		}
		if hostDisk {
			for _, dir := range l.HostDiskAllow {
				if within(dir, p) {
					return true
				}
			}
		}
		return false
	}
	for _, p := range domainPaths(d) {
		if !ok(p.path, p.hostDisk) {
			t.Errorf("%s: domain path %.200q (%s) is outside the state folder and the image store", name, p.path, p.where)
		}
	}
	arts, err := l.Artifacts(v)
	if err != nil {
		t.Errorf("%s: Artifacts fails where Convert succeeded: %v", name, err)
		return
	}
	for _, a := range arts {
		isHostDisk := v.Spec.Volumes[a.Index].HostDisk != nil
		if !ok(a.Path, isHostDisk) {
			t.Errorf("%s: artifact %s path %.200q is outside", name, a.Volume, a.Path)
		}
		if a.Kind != convert.ArtifactNone && a.Kind != convert.ArtifactHostDisk && !within(state, a.Path) {
			t.Errorf("%s: artifact %s (%s) is made outside the state folder: %.200q", name, a.Volume, a.Kind, a.Path)
		}
		if a.BackingPath != "" && !ok(a.BackingPath, false) {
			t.Errorf("%s: artifact %s backing path %.200q is outside", name, a.Volume, a.BackingPath)
		}
	}
}

type domainPath struct {
	path, where string
	hostDisk    bool // a disk's source, which may be an allowed hostDisk
}

// domainPaths lists every host path a domain names: disk sources, firmware,
// kernel and initrd, NVRAM, character device sockets and logs, graphics
// sockets.
func domainPaths(d *libvirtxml.Domain) []domainPath {
	var out []domainPath
	add := func(p, where string, hd bool) {
		if p != "" {
			out = append(out, domainPath{p, where, hd})
		}
	}
	if os := d.OS; os != nil {
		add(os.Kernel, "kernel", false)
		add(os.Initrd, "initrd", false)
		add(os.DTB, "dtb", false)
		if os.Loader != nil {
			add(os.Loader.Path, "loader", false)
		}
		if os.NVRam != nil {
			add(os.NVRam.NVRam, "nvram", false)
			add(os.NVRam.Template, "nvram template", false)
		}
	}
	if d.Devices == nil {
		return out
	}
	for _, disk := range d.Devices.Disks {
		if s := disk.Source; s != nil {
			if s.File != nil {
				add(s.File.File, "disk", true)
			}
			if s.Block != nil {
				add(s.Block.Dev, "disk", true)
			}
			if s.Dir != nil {
				add(s.Dir.Dir, "disk", false)
			}
		}
	}
	for _, s := range d.Devices.Serials {
		if s.Source != nil && s.Source.UNIX != nil {
			add(s.Source.UNIX.Path, "serial socket", false)
		}
		if s.Source != nil && s.Source.File != nil {
			add(s.Source.File.Path, "serial file", false)
		}
		if s.Log != nil {
			add(s.Log.File, "serial log", false)
		}
	}
	for _, c := range d.Devices.Consoles {
		if c.Source != nil && c.Source.UNIX != nil {
			add(c.Source.UNIX.Path, "console socket", false)
		}
		if c.Log != nil {
			add(c.Log.File, "console log", false)
		}
	}
	for _, c := range d.Devices.Channels {
		if c.Source != nil && c.Source.UNIX != nil {
			add(c.Source.UNIX.Path, "channel socket", false)
		}
	}
	for _, g := range d.Devices.Graphics {
		if g.VNC != nil {
			add(g.VNC.Socket, "vnc socket", false)
			for _, l := range g.VNC.Listeners {
				if l.Socket != nil {
					add(l.Socket.Socket, "vnc socket", false)
				}
			}
		}
	}
	for _, f := range d.Devices.Filesystems {
		if f.Source != nil && f.Source.Mount != nil {
			add(f.Source.Mount.Dir, "filesystem", false)
		}
	}
	for _, tpm := range d.Devices.TPMs {
		if b := tpm.Backend; b != nil && b.Emulator != nil && b.Emulator.Source != nil && b.Emulator.Source.File != nil {
			add(b.Emulator.Source.File.Path, "tpm state", false)
		}
	}
	return out
}

// TestHostDiskAllow checks the allow-list of hostDisk paths: empty refuses
// every hostDisk, a folder allows what lies under it (not the folder
// itself, not a sibling whose name starts the same), "/" allows anything,
// relative entries allow nothing; the error names the field.
func TestHostDiskAllow(t *testing.T) {
	vmi, err := api.Decode([]byte(hostileBase))
	if err != nil {
		t.Fatal(err)
	}
	api.Default(vmi, api.ClusterConfig{})
	cases := []struct {
		allow []string
		path  string
		ok    bool
	}{
		{nil, "/srv/vms/a.img", false},
		{[]string{}, "/srv/vms/a.img", false},
		{[]string{"/srv/vms"}, "/srv/vms/a.img", true},
		{[]string{"/srv/vms/"}, "/srv/vms/x/y/a.img", true},
		{[]string{"/srv/vms"}, "/srv/vms", false},
		{[]string{"/srv/vms"}, "/srv/vms-2/a.img", false},
		{[]string{"/srv/vms"}, "/srv/a.img", false},
		{[]string{"/srv/vms"}, "/srv/vms//a.img", true},
		{[]string{"srv/vms", "vms"}, "/srv/vms/a.img", false},
		{[]string{"/other", "/srv/vms"}, "/srv/vms/a.img", true},
		{[]string{"/"}, "/etc/shadow", true},
		{[]string{"/dev/vg0"}, "/dev/vg0/lv", true},
		{[]string{"/srv/vms"}, "/srv/vms/a\x00.img", false},
		{[]string{"/srv/vms"}, "/srv/vms/a\n.img", false},
	}
	for _, c := range cases {
		v := vmi.DeepCopy()
		v.Spec.Volumes[1].HostDisk.Path = c.path
		l := hostileLayout("x")
		l.HostDiskAllow = c.allow
		src, err := l.Volume(v, 1)
		if c.ok {
			if err != nil || src.Path != filepath.Clean(c.path) {
				t.Errorf("allow %q, path %q: %+v, %v; want the cleaned path", c.allow, c.path, src, err)
			}
			continue
		}
		var fe *field.Error
		if !errors.As(err, &fe) || fe.Field != "spec.volumes[1].hostDisk.path" {
			t.Errorf("allow %q, path %q: %+v, %v; want a field error on spec.volumes[1].hostDisk.path", c.allow, c.path, src, err)
		}
		if _, aerr := l.VolumeArtifact(v, 1); aerr == nil {
			t.Errorf("allow %q, path %q: VolumeArtifact accepts what Volume refuses", c.allow, c.path)
		}
	}
}
