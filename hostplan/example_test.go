package hostplan_test

import (
	"fmt"
	"log"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/hostplan"
)

// The plan of a VMI with a cloud-init volume on a host whose VMIs live in
// /srv/vmis: the domain's marks, and the artifacts a launcher makes before
// it defines the domain. Nothing of the host is read.
func Example() {
	vmi, err := api.Decode([]byte(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: tiny, namespace: demo}
spec:
  domain:
    resources: {requests: {memory: 128Mi}}
    devices:
      disks: [{name: cloudinit, disk: {bus: virtio}}]
  volumes:
  - {name: cloudinit, cloudInitNoCloud: {userData: "#cloud-config\n"}}
`))
	if err != nil {
		log.Fatal(err)
	}
	host := hostplan.Host{Owner: "node01", Options: convert.Options{
		Layout:     convert.HostLayout{StateDir: "/srv/vmis", ImageStore: "/srv/images"},
		DomainType: "qemu",
	}}
	req, err := hostplan.Prepare(vmi, host) // defaults, validation; what to gather
	if err != nil {
		log.Fatal(err)
	}
	plan, err := hostplan.Make(req, host, hostplan.Inputs{}) // no images, no config sources to gather
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(plan.Domain.Name, plan.Marks.Owner, plan.Marks.VMI.Grace)
	for _, a := range plan.Artifacts {
		fmt.Println(a.Action, a.Kind, a.Path)
	}
	// Output:
	// demo_tiny node01 30
	// create stateDir /srv/vmis
	// create stateFolder /srv/vmis/demo_tiny
	// create folder /srv/vmis/demo_tiny/cloud-init
	// write cloudInitNoCloud /srv/vmis/demo_tiny/cloud-init/nocloud.iso
}
