package convert

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// watchdogActions are the actions a watchdog may take.
var watchdogActions = []string{string(v1.WatchdogActionReset), string(v1.WatchdogActionPoweroff), string(v1.WatchdogActionShutdown)}

// watchdog adds spec.domain.devices.watchdog: on amd64 an i6300esb with its
// action (reset when unset), alias ua-<name>. The diag288 watchdog exists
// only on s390x and is refused.
func (c *converter) watchdog(d *libvirtxml.Domain) error {
	w := c.spec.Domain.Devices.Watchdog
	if w == nil {
		return nil
	}
	path := watchdogPath
	if w.Diag288 != nil {
		return field.Forbidden(path.Child("diag288"), "the diag288 watchdog exists only on s390x")
	}
	if w.I6300ESB == nil {
		return field.Required(path.Child("i6300esb"), "a watchdog type is required")
	}
	action := string(w.I6300ESB.Action)
	if action == "" {
		action = string(v1.WatchdogActionReset)
	}
	if !slices.Contains(watchdogActions, action) {
		return field.NotSupported(path.Child("i6300esb", "action"), action, watchdogActions)
	}
	d.Devices.Watchdogs = append(d.Devices.Watchdogs, libvirtxml.DomainWatchdog{
		Model:  "i6300esb",
		Action: action,
		Alias:  c.uaAlias(w.Name),
	})
	return nil
}
