package convert

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"libvirt.org/go/libvirtxml"
)

// soundModels are the sound cards KubeVirt emulates.
var soundModels = []string{"ich9", "ac97"}

// sound adds spec.domain.devices.sound: an ich9 (the default) or ac97
// card, alias ua-<name>.
func (c *converter) sound(d *libvirtxml.Domain) error {
	s := c.spec.Domain.Devices.Sound
	if s == nil {
		return nil
	}
	model := s.Model
	if model == "" {
		model = "ich9"
	}
	if !slices.Contains(soundModels, model) {
		return field.NotSupported(devicesPath.Child("sound", "model"), model, soundModels)
	}
	d.Devices.Sounds = append(d.Devices.Sounds, libvirtxml.DomainSound{Model: model, Alias: c.uaAlias(s.Name)})
	return nil
}
