package convert

import (
	"libvirt.org/go/libvirtxml"

	"github.com/vmi2libvirt/vmi2libvirt/internal/vocab"
)

// lifecycle sets what libvirt does when the guest reboots: the <on_reboot>
// vocab.RebootPolicies maps spec.domain.rebootPolicy to.
func (c *converter) lifecycle(d *libvirtxml.Domain) error {
	if p := c.spec.Domain.RebootPolicy; p != nil {
		d.OnReboot, _ = vocab.RebootPolicies.Lookup(string(*p))
	}
	// Without a policy libvirt's default holds: the guest reboots silently.
	return nil
}
