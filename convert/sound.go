package convert

import "libvirt.org/go/libvirtxml"

// sound adds spec.domain.devices.sound: an ich9 (the default) or ac97
// card (vocab.SoundModels), alias ua-<name>.
func (c *converter) sound(d *libvirtxml.Domain) error {
	s := c.spec.Domain.Devices.Sound
	if s == nil {
		return nil
	}
	model := s.Model
	if model == "" {
		model = "ich9"
	}
	d.Devices.Sounds = append(d.Devices.Sounds, libvirtxml.DomainSound{Model: model, Alias: c.uaAlias(s.Name)})
	return nil
}
