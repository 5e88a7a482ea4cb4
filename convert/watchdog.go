package convert

import (
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// watchdog adds spec.domain.devices.watchdog: on amd64 an i6300esb with its
// action (reset when unset; the actions are vocab.WatchdogActions), alias
// ua-<name>. api.Validate refuses the other watchdogs (diag288 exists only
// on s390x).
func (c *converter) watchdog(d *libvirtxml.Domain) error {
	w := c.spec.Domain.Devices.Watchdog
	if w == nil || w.I6300ESB == nil {
		return nil
	}
	action := string(w.I6300ESB.Action)
	if action == "" {
		action = string(v1.WatchdogActionReset)
	}
	d.Devices.Watchdogs = append(d.Devices.Watchdogs, libvirtxml.DomainWatchdog{
		Model:  "i6300esb",
		Action: action,
		Alias:  c.uaAlias(w.Name),
	})
	return nil
}
