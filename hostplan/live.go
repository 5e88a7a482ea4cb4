package hostplan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// LiveOpKind is what one live operation does to a running domain.
type LiveOpKind string

// The live operations: what libvirt changes in a running domain (and in
// its persistent definition, so that a restart keeps it).
const (
	// AttachDisk and DetachDisk hot-plug a disk on the virtio or SCSI bus
	// (AttachDeviceFlags, DetachDeviceFlags).
	AttachDisk LiveOpKind = "attach-disk"
	DetachDisk LiveOpKind = "detach-disk"
	// AttachInterface and DetachInterface hot-plug a NIC: one added to the
	// spec, or one whose state became absent.
	AttachInterface LiveOpKind = "attach-interface"
	DetachInterface LiveOpKind = "detach-interface"
	// SetLink sets a NIC's link up or down (UpdateDeviceFlags).
	SetLink LiveOpKind = "set-link"
	// ChangeMedia changes the medium in a CD-ROM drive (UpdateDeviceFlags).
	ChangeMedia LiveOpKind = "change-media"
	// SetVCPUs sets the number of enabled vCPUs, within the domain's
	// maximum (SetVcpusFlags).
	SetVCPUs LiveOpKind = "set-vcpus"
	// ResizeMemory sets a virtio-mem device's requested size.
	ResizeMemory LiveOpKind = "resize-memory"
)

// LiveOp is one operation that brings a running domain closer to a new
// plan.
type LiveOp struct {
	Kind LiveOpKind
	// Field is the VMI's field the operation follows
	// (spec.domain.devices.disks[2]).
	Field *field.Path
	// Name is the disk's or interface's name in the VMI.
	Name string
	// Device is the device element libvirt is given: the new plan's for an
	// attach, the running domain's own for a detach, the running domain's
	// with the change made for an update.
	Device string
	// VCPUs is the number of vCPUs for SetVCPUs; Memory the requested size
	// in bytes for ResizeMemory.
	VCPUs  uint
	Memory uint64
}

// String says what the operation does, as one line.
func (o LiveOp) String() string {
	switch o.Kind {
	case SetVCPUs:
		return fmt.Sprintf("%s %d (%s)", o.Kind, o.VCPUs, o.Field)
	case ResizeMemory:
		return fmt.Sprintf("%s %d (%s)", o.Kind, o.Memory, o.Field)
	}
	return fmt.Sprintf("%s %s (%s)", o.Kind, o.Name, o.Field)
}

// Live is the difference between a running domain and a new plan: the
// operations libvirt can make live, and the changes it cannot.
type Live struct {
	// Ops are the live operations, in the order they are made: detaches
	// first, then attaches, updates and resizes.
	Ops []LiveOp
	// Restart lists the changes of the spec that only a restart of the VMI
	// applies, at their field paths, in order. When it has any, the
	// launcher makes none of Ops.
	Restart field.ErrorList
	// HostLacks lists the changes this host's libvirt cannot make at all
	// (a host fact: a restart does not help), at their field paths.
	HostLacks field.ErrorList
	// Hotplugged are the volumes whose disks the operations attach, or
	// that the running domain has although the spec it ran lacked them (a
	// launcher died before recording them), in the order of the new spec;
	// the launcher adds them to those its marks record (Marks.Hotplugged).
	Hotplugged []string
}

// Changed tells whether the spec changed at all.
func (l *Live) Changed() bool {
	return len(l.Ops) > 0 || len(l.Restart) > 0 || len(l.HostLacks) > 0
}

// Applicable tells whether every change can be made live.
func (l *Live) Applicable() bool { return len(l.Restart) == 0 && len(l.HostLacks) == 0 }

// restartDetail is the detail of a change only a restart applies.
const restartDetail = "this change needs a restart of the VMI"

// hotplugBuses are the disk buses KubeVirt hot-plugs disks on.
var hotplugBuses = map[string]bool{string(v1.DiskBusVirtio): true, string(v1.DiskBusSCSI): true}

// LiveChanges compares a running domain (its live definition, or the plan
// it was defined from) and the spec it runs (was) with a new plan of the
// same VMI: the live operations that bring the domain to the new plan, and
// the changes of the spec that need a restart. It reads nothing of the
// host. Disks and NICs are matched by their aliases (ua-<name>), so a
// domain that already has a device of the new plan (a launcher that died
// after attaching it) gets no second attach. facts are the host's (for
// what its libvirt cannot change live); nil: it lacks nothing.
func LiveChanges(running *libvirtxml.Domain, was *v1.VirtualMachineInstanceSpec, plan *Plan, facts *convert.HostFacts) (*Live, error) {
	now := &plan.VMI.Spec
	// was is the marks' spec, redacted; now is compared redacted too.
	oldSpec, newSpec := was.DeepCopy(), redactedSpec(now).DeepCopy()
	live := &Live{}
	lc := liveComparer{live: live, was: was, now: now, oldSpec: oldSpec, newSpec: newSpec}
	if err := lc.disks(devicesOf(running), devicesOf(plan.Domain)); err != nil {
		return nil, err
	}
	if err := lc.interfaces(devicesOf(running), devicesOf(plan.Domain)); err != nil {
		return nil, err
	}
	lc.vcpus(running, plan.Domain)
	if err := lc.memory(running, facts); err != nil {
		return nil, err
	}
	paths, err := specDiff(oldSpec, newSpec)
	if err != nil {
		return nil, err
	}
	for _, p := range paths {
		live.Restart = append(live.Restart, field.Forbidden(p, restartDetail))
	}
	sort.SliceStable(live.Ops, func(i, j int) bool { return opOrder[live.Ops[i].Kind] < opOrder[live.Ops[j].Kind] })
	return live, nil
}

// opOrder is the order of the operations' kinds in Live.Ops.
var opOrder = map[LiveOpKind]int{DetachDisk: 0, DetachInterface: 1, AttachDisk: 2, AttachInterface: 3, SetLink: 4, ChangeMedia: 5, SetVCPUs: 6, ResizeMemory: 7}

// liveComparer holds what LiveChanges compares: the specs as given, and
// copies of them from which each change made live is taken out, so that
// what remains different needs a restart.
type liveComparer struct {
	live             *Live
	was, now         *v1.VirtualMachineInstanceSpec
	oldSpec, newSpec *v1.VirtualMachineInstanceSpec
}

var (
	disksPath      = field.NewPath("spec", "domain", "devices", "disks")
	interfacesPath = field.NewPath("spec", "domain", "devices", "interfaces")
	socketsPath    = field.NewPath("spec", "domain", "cpu", "sockets")
	guestPath      = field.NewPath("spec", "domain", "memory", "guest")
)

// devicesOf returns d's devices, empty when it has none.
func devicesOf(d *libvirtxml.Domain) *libvirtxml.DomainDeviceList {
	if d == nil || d.Devices == nil {
		return &libvirtxml.DomainDeviceList{}
	}
	return d.Devices
}

// aliasName is the VMI name of a device with KubeVirt's alias ua-<name>.
func aliasName(a *libvirtxml.DomainAlias) string {
	if a == nil {
		return ""
	}
	name, _ := strings.CutPrefix(a.Name, "ua-")
	if name == a.Name {
		return ""
	}
	return name
}

// disks compares the disks by name: a disk on the virtio or SCSI bus
// added or removed is hot-plugged, a CD-ROM whose source changed gets its
// new medium. A disk the running domain already has (a launcher died
// after attaching it) or no longer has (after detaching it) needs nothing.
func (lc *liveComparer) disks(old, cur *libvirtxml.DomainDeviceList) error {
	oldByName, newByName := disksByName(old), disksByName(cur)
	for i, d := range lc.now.Domain.Devices.Disks {
		nd, od := newByName[d.Name], oldByName[d.Name]
		switch {
		case nd == nil:
		case od == nil && hotpluggable(nd):
			if err := lc.op(LiveOp{Kind: AttachDisk, Field: disksPath.Index(i), Name: d.Name}, nd); err != nil {
				return err
			}
			lc.live.Hotplugged = append(lc.live.Hotplugged, d.Name)
			lc.dropDisk(d.Name)
		case od == nil && !specHasDisk(lc.was, d.Name):
			lc.live.Restart = append(lc.live.Restart, field.Forbidden(disksPath.Index(i),
				"only disks on the virtio or scsi bus are hot-plugged: this one needs a restart of the VMI"))
			lc.dropDisk(d.Name)
		case od != nil && !specHasDisk(lc.was, d.Name):
			lc.live.Hotplugged = append(lc.live.Hotplugged, d.Name) // attached, not recorded
			lc.dropDisk(d.Name)
		case od != nil && nd.Device == "cdrom" && od.Device == "cdrom" && mediumOf(od) != mediumOf(nd):
			upd := *od
			upd.Source, upd.Driver = nd.Source, nd.Driver
			if err := lc.op(LiveOp{Kind: ChangeMedia, Field: disksPath.Index(i), Name: d.Name}, &upd); err != nil {
				return err
			}
			lc.sameVolume(d.Name)
		}
	}
	for i, d := range lc.was.Domain.Devices.Disks {
		if specHasDisk(lc.now, d.Name) {
			continue
		}
		switch od := oldByName[d.Name]; {
		case od == nil:
			lc.dropDisk(d.Name) // detached, not recorded
		case hotpluggable(od):
			if err := lc.op(LiveOp{Kind: DetachDisk, Field: disksPath.Index(i), Name: d.Name}, od); err != nil {
				return err
			}
			lc.dropDisk(d.Name)
		default:
			lc.live.Restart = append(lc.live.Restart, field.Forbidden(disksPath.Index(i),
				"only disks on the virtio or scsi bus are hot-unplugged: removing this one needs a restart of the VMI"))
			lc.dropDisk(d.Name)
		}
	}
	return nil
}

// mediumOf is the file or block device in a drive: what a CD-ROM's change
// of medium compares (libvirt's live XML adds to a source what a plan
// does not write, its index).
func mediumOf(d *libvirtxml.DomainDisk) string {
	switch s := d.Source; {
	case s == nil:
		return ""
	case s.File != nil:
		return "file:" + s.File.File
	case s.Block != nil:
		return "block:" + s.Block.Dev
	}
	return ""
}

// op appends o with the XML of device dev.
func (lc *liveComparer) op(o LiveOp, dev interface{ Marshal() (string, error) }) error {
	xml, err := dev.Marshal()
	if err != nil {
		return fmt.Errorf("hostplan: marshal the device of %s: %w", o.Field, err)
	}
	o.Device = xml
	lc.live.Ops = append(lc.live.Ops, o)
	return nil
}

// disksByName indexes the disks of a device list by their VMI names.
func disksByName(devs *libvirtxml.DomainDeviceList) map[string]*libvirtxml.DomainDisk {
	m := map[string]*libvirtxml.DomainDisk{}
	for i := range devs.Disks {
		if n := aliasName(devs.Disks[i].Alias); n != "" {
			m[n] = &devs.Disks[i]
		}
	}
	return m
}

// hotpluggable tells whether a disk of the domain can be hot-plugged: a
// disk (not a CD-ROM) on the virtio or SCSI bus.
func hotpluggable(d *libvirtxml.DomainDisk) bool {
	return d != nil && d.Device != "cdrom" && d.Target != nil && hotplugBuses[d.Target.Bus]
}

// specHasDisk tells whether spec has a disk called name.
func specHasDisk(spec *v1.VirtualMachineInstanceSpec, name string) bool {
	for _, d := range spec.Domain.Devices.Disks {
		if d.Name == name {
			return true
		}
	}
	return false
}

// dropDisk takes the disk called name and its volume out of both copies
// of the specs: its change is made live.
func (lc *liveComparer) dropDisk(name string) {
	for _, s := range []*v1.VirtualMachineInstanceSpec{lc.oldSpec, lc.newSpec} {
		s.Domain.Devices.Disks = without(s.Domain.Devices.Disks, func(d v1.Disk) bool { return d.Name == name })
		s.Volumes = without(s.Volumes, func(v v1.Volume) bool { return v.Name == name })
	}
}

// sameVolume makes the old copy's volume called name the new one's: its
// change is made live.
func (lc *liveComparer) sameVolume(name string) {
	for i := range lc.newSpec.Volumes {
		if lc.newSpec.Volumes[i].Name != name {
			continue
		}
		for j := range lc.oldSpec.Volumes {
			if lc.oldSpec.Volumes[j].Name == name {
				lc.oldSpec.Volumes[j] = *lc.newSpec.Volumes[i].DeepCopy()
			}
		}
	}
}

// without returns s without the elements drop picks.
func without[T any](s []T, drop func(T) bool) []T {
	var out []T
	for _, e := range s {
		if !drop(e) {
			out = append(out, e)
		}
	}
	return out
}

// interfaces compares the NICs by name: one added (or no longer absent)
// is attached, one removed (or now absent) detached, one whose link state
// changed updated.
func (lc *liveComparer) interfaces(old, cur *libvirtxml.DomainDeviceList) error {
	oldByName, newByName := interfacesByName(old), interfacesByName(cur)
	for i, iface := range lc.now.Domain.Devices.Interfaces {
		p := interfacesPath.Index(i)
		nd, od := newByName[iface.Name], oldByName[iface.Name]
		var err error
		switch {
		case nd != nil && od == nil:
			err = lc.op(LiveOp{Kind: AttachInterface, Field: p, Name: iface.Name}, nd)
			lc.dropInterface(iface.Name)
		case nd == nil && od != nil:
			err = lc.op(LiveOp{Kind: DetachInterface, Field: p.Child("state"), Name: iface.Name}, od)
			lc.dropInterface(iface.Name)
		case nd == nil && od == nil:
			lc.dropInterface(iface.Name) // absent, and not there
		case linkState(nd) != linkState(od):
			upd := *od
			upd.Link = nd.Link
			err = lc.op(LiveOp{Kind: SetLink, Field: p.Child("state"), Name: iface.Name}, &upd)
			lc.sameInterfaceState(iface.Name)
		default:
			lc.sameInterfaceState(iface.Name) // up and unset are the same link
		}
		if err != nil {
			return err
		}
	}
	for i, iface := range lc.was.Domain.Devices.Interfaces {
		if specHasInterface(lc.now, iface.Name) {
			continue
		}
		if od := oldByName[iface.Name]; od != nil {
			if err := lc.op(LiveOp{Kind: DetachInterface, Field: interfacesPath.Index(i), Name: iface.Name}, od); err != nil {
				return err
			}
		}
		lc.dropInterface(iface.Name)
	}
	return nil
}

// interfacesByName indexes the NICs of a device list by their VMI names.
func interfacesByName(devs *libvirtxml.DomainDeviceList) map[string]*libvirtxml.DomainInterface {
	m := map[string]*libvirtxml.DomainInterface{}
	for i := range devs.Interfaces {
		if n := aliasName(devs.Interfaces[i].Alias); n != "" {
			m[n] = &devs.Interfaces[i]
		}
	}
	return m
}

// linkState is a NIC's link state, "up" when unset.
func linkState(i *libvirtxml.DomainInterface) string {
	if i.Link == nil || i.Link.State == "" {
		return "up"
	}
	return i.Link.State
}

// specHasInterface tells whether spec has an interface called name.
func specHasInterface(spec *v1.VirtualMachineInstanceSpec, name string) bool {
	for _, i := range spec.Domain.Devices.Interfaces {
		if i.Name == name {
			return true
		}
	}
	return false
}

// dropInterface takes the interface called name and its network out of
// both copies of the specs.
func (lc *liveComparer) dropInterface(name string) {
	for _, s := range []*v1.VirtualMachineInstanceSpec{lc.oldSpec, lc.newSpec} {
		s.Domain.Devices.Interfaces = without(s.Domain.Devices.Interfaces, func(i v1.Interface) bool { return i.Name == name })
		s.Networks = without(s.Networks, func(n v1.Network) bool { return n.Name == name })
	}
}

// sameInterfaceState makes the old copy's state of the interface called
// name the new one's.
func (lc *liveComparer) sameInterfaceState(name string) {
	for i := range lc.newSpec.Domain.Devices.Interfaces {
		if lc.newSpec.Domain.Devices.Interfaces[i].Name != name {
			continue
		}
		for j := range lc.oldSpec.Domain.Devices.Interfaces {
			if lc.oldSpec.Domain.Devices.Interfaces[j].Name == name {
				lc.oldSpec.Domain.Devices.Interfaces[j].State = lc.newSpec.Domain.Devices.Interfaces[i].State
			}
		}
	}
}

// vcpus compares the enabled vCPUs: within the same maximum, a change of
// sockets is made live.
func (lc *liveComparer) vcpus(old, cur *libvirtxml.Domain) {
	if old.VCPU == nil || cur.VCPU == nil || old.VCPU.Value != cur.VCPU.Value {
		return // a new maximum: the spec diff reports it
	}
	before, after := enabledVCPUs(old), enabledVCPUs(cur)
	if before == after {
		lc.sameSockets()
		return
	}
	lc.live.Ops = append(lc.live.Ops, LiveOp{Kind: SetVCPUs, Field: socketsPath, VCPUs: after})
	lc.sameSockets()
}

// enabledVCPUs is the number of vCPUs d enables: its <vcpu current>, or
// those its <vcpus> list enables, or all.
func enabledVCPUs(d *libvirtxml.Domain) uint {
	if d.VCPU.Current != 0 {
		return d.VCPU.Current
	}
	if d.VCPUs != nil && len(d.VCPUs.VCPU) > 0 {
		n := uint(0)
		for _, v := range d.VCPUs.VCPU {
			if v.Enabled == "yes" {
				n++
			}
		}
		return n
	}
	return d.VCPU.Value
}

// sameSockets makes the old copy's sockets the new one's.
func (lc *liveComparer) sameSockets() {
	if lc.oldSpec.Domain.CPU != nil && lc.newSpec.Domain.CPU != nil {
		lc.oldSpec.Domain.CPU.Sockets = lc.newSpec.Domain.CPU.Sockets
	}
}

// memory compares the guest memory: a virtio-mem device gets its new
// requested size; without one, a host that refuses slot-less <maxMemory>
// cannot grow the guest at all (a host fact), and other hosts need a
// restart (the spec diff reports it).
func (lc *liveComparer) memory(old *libvirtxml.Domain, facts *convert.HostFacts) error {
	before, after := guestOf(lc.was), guestOf(lc.now)
	if before == nil || after == nil || before.Equal(*after) {
		return nil
	}
	if mem := virtioMem(old); mem != nil && mem.Target != nil && old.Memory != nil {
		grow := after.Value() - int64(kib(old.Memory.Value, old.Memory.Unit))*1024
		if grow >= 0 {
			upd := *mem
			t := *mem.Target
			t.Requested = &libvirtxml.DomainMemorydevTargetRequested{Value: uint(grow / 1024), Unit: "KiB"}
			upd.Target = &t
			if err := lc.op(LiveOp{Kind: ResizeMemory, Field: guestPath, Memory: uint64(grow)}, &upd); err != nil {
				return err
			}
			lc.oldSpec.Domain.Memory.Guest = lc.newSpec.Domain.Memory.Guest
			return nil
		}
	}
	if facts != nil && !facts.Has(convert.LackSlotlessMaxMemory) {
		lc.live.HostLacks = append(lc.live.HostLacks, field.Forbidden(guestPath,
			"this host's libvirt refuses <maxMemory> without memory slots: the guest's memory cannot change while it runs (virtio-mem)"))
		lc.oldSpec.Domain.Memory.Guest = lc.newSpec.Domain.Memory.Guest
	}
	return nil
}

// guestOf is spec's spec.domain.memory.guest, or nil.
func guestOf(spec *v1.VirtualMachineInstanceSpec) *resource.Quantity {
	if m := spec.Domain.Memory; m != nil {
		return m.Guest
	}
	return nil
}

// kib is a libvirt memory size in KiB.
func kib(v uint, unit string) uint {
	switch unit {
	case "b", "bytes":
		return v / 1024
	case "M", "MiB":
		return v * 1024
	case "G", "GiB":
		return v * 1024 * 1024
	}
	return v
}

// virtioMem returns d's virtio-mem device, or nil.
func virtioMem(d *libvirtxml.Domain) *libvirtxml.DomainMemorydev {
	for i, m := range devicesOf(d).Memorydevs {
		if m.Model == "virtio-mem" {
			return &devicesOf(d).Memorydevs[i]
		}
	}
	return nil
}

// specDiff returns the paths at which two specs differ, as KubeVirt's
// JSON names them: a list whose length changed is one path, a list of the
// same length is compared element by element.
func specDiff(a, b *v1.VirtualMachineInstanceSpec) ([]*field.Path, error) {
	var av, bv any
	for _, x := range []struct {
		s   *v1.VirtualMachineInstanceSpec
		out *any
	}{{a, &av}, {b, &bv}} {
		raw, err := json.Marshal(x.s)
		if err != nil {
			return nil, fmt.Errorf("hostplan: compare specs: %w", err)
		}
		if err := json.Unmarshal(raw, x.out); err != nil {
			return nil, fmt.Errorf("hostplan: compare specs: %w", err)
		}
	}
	var paths []*field.Path
	diffValues(field.NewPath("spec"), av, bv, &paths)
	return paths, nil
}

// diffValues appends to paths where a and b (decoded JSON) differ.
func diffValues(p *field.Path, a, b any, paths *[]*field.Path) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := map[string]bool{}
		for k := range av {
			keys[k] = true
		}
		for k := range bv {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		for _, k := range sorted {
			diffValues(p.Child(k), av[k], bv[k], paths)
		}
		return
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			break
		}
		for i := range av {
			diffValues(p.Index(i), av[i], bv[i], paths)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		*paths = append(*paths, p)
	}
}

// SpecMark is the mark of v's spec in a domain's metadata (Marks.Spec):
// its JSON, with the inline data of cloud-init volumes as their digests
// (redactedSpec).
func SpecMark(v *v1.VirtualMachineInstance) (string, error) {
	raw, err := json.Marshal(redactedSpec(&v.Spec))
	if err != nil {
		return "", fmt.Errorf("hostplan: record the spec of %s: %w", v.Name, err)
	}
	return string(raw), nil
}

// redactedSpec is spec with the inline user and network data of its
// cloud-init volumes replaced by their SHA-256 digests ("sha256:…"): the
// marks are in the domain's XML, which every reader of libvirt sees, and
// user data holds secrets (launcher's TestE2EUserDataSecrecy). A digest
// still tells a change. spec itself is returned when it has no such data;
// otherwise a copy.
func redactedSpec(spec *v1.VirtualMachineInstanceSpec) *v1.VirtualMachineInstanceSpec {
	fields := func(s *v1.VirtualMachineInstanceSpec, i int) []*string {
		switch vs := &s.Volumes[i].VolumeSource; {
		case vs.CloudInitNoCloud != nil:
			c := vs.CloudInitNoCloud
			return []*string{&c.UserData, &c.UserDataBase64, &c.NetworkData, &c.NetworkDataBase64}
		case vs.CloudInitConfigDrive != nil:
			c := vs.CloudInitConfigDrive
			return []*string{&c.UserData, &c.UserDataBase64, &c.NetworkData, &c.NetworkDataBase64}
		}
		return nil
	}
	out := spec
	for i := range spec.Volumes {
		for j, f := range fields(spec, i) {
			if *f == "" {
				continue
			}
			if out == spec {
				out = spec.DeepCopy()
			}
			sum := sha256.Sum256([]byte(*f))
			*fields(out, i)[j] = "sha256:" + hex.EncodeToString(sum[:])
		}
	}
	return out
}

// SpecOf reads the spec a domain's marks record; nil when they record none
// (a domain defined before the marks had it).
func (m *Marks) SpecOf() (*v1.VirtualMachineInstanceSpec, error) {
	if m == nil || m.Spec == "" {
		return nil, nil
	}
	spec := &v1.VirtualMachineInstanceSpec{}
	if err := json.Unmarshal([]byte(m.Spec), spec); err != nil {
		return nil, fmt.Errorf("hostplan: the spec in the domain's metadata: %w", err)
	}
	return spec, nil
}
