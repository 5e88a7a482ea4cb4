package api

import (
	"reflect"
	"testing"
)

// TestValidateLeavesQuantities checks that Validate does not change the VMI
// it checks, not even the internal form of a quantity: comparing maxGuest
// with a guest written as "1.5Gi" used to turn maxGuest into the decimal
// form, and the converter then wrote maxMemory a byte short of KubeVirt's
// (checked against KubeVirt's converter at d923fdb815: 6442450944 and
// 2147483648 bytes for the two cases).
func TestValidateLeavesQuantities(t *testing.T) {
	for _, maxGuest := range []string{"", "      maxGuest: 2Gi\n"} {
		doc := "apiVersion: kubevirt.io/v1\nkind: VirtualMachineInstance\nmetadata: {name: m}\nspec:\n  domain:\n    memory:\n      guest: 1.5Gi\n" + maxGuest +
			"    devices: {}\n"
		vmi, err := Decode([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		Default(vmi, ClusterConfig{})
		before := vmi.DeepCopy()
		if errs := Validate(vmi); len(errs) > 0 {
			t.Fatal(errs)
		}
		if !reflect.DeepEqual(before, vmi) {
			t.Errorf("maxGuest %q: Validate changed the VMI", maxGuest)
		}
		if _, exact := vmi.Spec.Domain.Memory.MaxGuest.AsInt64(); !exact {
			t.Errorf("maxGuest %q: maxGuest %v no longer an exact integer", maxGuest, vmi.Spec.Domain.Memory.MaxGuest)
		}
	}
}
