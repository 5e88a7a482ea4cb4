package api

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/internal/vocab"
)

// aliasKind is a kind of device KubeVirt aliases ua-<name>: its path in
// the VMI (a list, or a single device) and whether its own family reports
// a name used twice within it.
type aliasKind struct {
	path   *field.Path
	list   bool
	ownDup bool
}

// aliasKinds are the devices aliased ua-<name>, in the order their names
// are compared: the later of two devices of the same name is refused.
var aliasKinds = []aliasKind{
	{disksPath, true, true},
	{ifacesPath, true, true},
	{devicesPath.Child("inputs"), true, false},
	{devicesPath.Child("watchdog"), false, false},
	{devicesPath.Child("sound"), false, false},
}

// aliasedName is the name of one device aliased ua-<name>: its kind (an
// index into aliasKinds) and its index in the kind's list.
type aliasedName struct {
	name        string
	kind, index int
}

// namePath is the path of the device's name.
func (a aliasedName) namePath() *field.Path {
	k := aliasKinds[a.kind]
	if k.list {
		return k.path.Index(a.index).Child("name")
	}
	return k.path.Child("name")
}

// validateAliases applies this library's rule that the devices KubeVirt
// aliases ua-<name> (disks, interfaces, inputs, the watchdog, the sound
// device) have names no other of them has: libvirt refuses an alias used
// twice ("non unique alias detected"), which KubeVirt's admission lets
// through and its converter writes. Names shared within disks or within
// interfaces are those families' Duplicate errors; this one names the
// later device of any other pair.
func validateAliases(vmi *v1.VirtualMachineInstance) field.ErrorList {
	devs := &vmi.Spec.Domain.Devices
	var buf [32]aliasedName
	names := buf[:0]
	for i := range devs.Disks {
		names = append(names, aliasedName{devs.Disks[i].Name, 0, i})
	}
	for i := range devs.Interfaces {
		names = append(names, aliasedName{devs.Interfaces[i].Name, 1, i})
	}
	for i := range devs.Inputs {
		names = append(names, aliasedName{devs.Inputs[i].Name, 2, i})
	}
	if w := devs.Watchdog; w != nil {
		names = append(names, aliasedName{w.Name, 3, 0})
	}
	if s := devs.Sound; s != nil {
		names = append(names, aliasedName{s.Name, 4, 0})
	}
	var errs field.ErrorList
	for j, b := range names {
		for _, a := range names[:j] {
			if a.name != b.name || b.name == "" {
				continue
			}
			if a.kind != b.kind || !aliasKinds[a.kind].ownDup {
				errs = append(errs, field.Duplicate(b.namePath(), fmt.Sprintf("%s (also %s): both devices would have the libvirt alias %s%s",
					b.name, a.namePath(), vocab.UserAliasPrefix, b.name)))
			}
			break
		}
	}
	return errs
}
