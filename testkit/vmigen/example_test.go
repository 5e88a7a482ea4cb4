package vmigen_test

import (
	"fmt"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/vmigen"
)

// Generate a VMI, default it as KubeVirt's admission does, and convert it
// with the Options its Case carries.
func ExampleGenerate() {
	cfg := vmigen.Config{Seed: 1, Layout: vmigen.HostLayout}
	for i := range 3 {
		c := vmigen.Generate(cfg, i)
		api.Default(c.VMI, api.ClusterConfig{})
		if errs := api.Validate(c.VMI); len(errs) > 0 {
			fmt.Println(c.VMI.Name, "invalid:", errs)
			continue
		}
		d, err := convert.Convert(c.VMI, c.Options)
		if err != nil {
			fmt.Println(c.VMI.Name, "refused:", err)
			continue
		}
		fmt.Println(d.Name, len(d.Devices.Disks), "disks")
	}
	// Output:
	// default_vmigen-s1-00000 1 disks
	// default_vmigen-s1-00001 2 disks
	// default_vmigen-s1-00002 2 disks
}
