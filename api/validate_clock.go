package api

import (
	"k8s.io/apimachinery/pkg/util/validation/field"
	v1 "kubevirt.io/api/core/v1"
)

// validateClock is this library's own rule for the clock offset, a union
// of utc and timezone: KubeVirt takes utc and silently drops a timezone set
// beside it; here setting both is an error. (The timezone's syntax is
// checked with the other strings, in validateStrings.)
func validateClock(vmi *v1.VirtualMachineInstance) field.ErrorList {
	c := vmi.Spec.Domain.Clock
	if c == nil || c.UTC == nil || c.Timezone == nil {
		return nil
	}
	clockPath := domainPath.Child("clock")
	return field.ErrorList{field.Invalid(clockPath, "utc and timezone",
		"set either "+clockPath.Child("utc").String()+" or "+clockPath.Child("timezone").String()+", not both")}
}
