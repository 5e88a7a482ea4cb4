package convert

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// onReboot maps spec.domain.rebootPolicy to the domain's <on_reboot>.
var onReboot = map[v1.RebootPolicy]string{
	v1.RebootPolicyReboot:    "restart",
	v1.RebootPolicyTerminate: "destroy",
}

// lifecycle sets what libvirt does when the guest reboots.
func (c *converter) lifecycle(d *libvirtxml.Domain) error {
	p := c.spec.Domain.RebootPolicy
	if p == nil {
		return nil // libvirt's default: the guest reboots silently
	}
	action, ok := onReboot[*p]
	if !ok {
		return field.NotSupported(domainPath.Child("rebootPolicy"), string(*p), []string{string(v1.RebootPolicyReboot), string(v1.RebootPolicyTerminate)})
	}
	d.OnReboot = action
	return nil
}
