package convert_test

import (
	"fmt"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// ExampleConvert runs the whole pure pipeline on a small VMI and converts it
// for a plain libvirt host: its disk overlay lives in the VMI's state folder,
// its pod NIC becomes user-mode networking. The output was checked by hand
// against KubeVirt's domain for its own vmi-ephemeral example, the same VMI
// (memory in bytes, q35, host-model CPU, one vCPU enabled out of four
// hotpluggable sockets under the LiveUpdate defaults, virtio disk vda, the
// default pod NIC aliased ua-default).
func ExampleConvert() {
	vmi, err := api.Decode([]byte(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata:
  name: cirros
  namespace: demo
spec:
  domain:
    memory:
      guest: 128Mi
    devices:
      disks:
      - name: root
        disk:
          bus: virtio
  volumes:
  - name: root
    containerDisk:
      image: quay.io/kubevirt/cirros-container-disk-demo:v1.4.0
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	api.Default(vmi, api.ClusterConfig{})
	if errs := api.Validate(vmi); len(errs) > 0 {
		fmt.Println(errs.ToAggregate())
		return
	}

	opts := convert.KubeVirtOptions()
	opts.DomainType = "qemu" // no KVM: emulate
	opts.Layout = convert.HostLayout{
		StateDir:   "/var/lib/vmi2libvirt/vmis",
		ImageStore: "/var/lib/vmi2libvirt/images",
	}
	d, err := convert.Convert(vmi, opts)
	if err != nil {
		fmt.Println(err)
		return
	}

	fmt.Println("domain:", d.Type, d.Name)
	fmt.Println("memory:", d.Memory.Value, d.Memory.Unit)
	enabled := 0
	for _, v := range d.VCPUs.VCPU {
		if v.Enabled == "yes" {
			enabled++
		}
	}
	fmt.Println("vcpus:", d.VCPU.Value, "enabled:", enabled, "sockets:", d.CPU.Topology.Sockets)
	fmt.Println("machine:", d.OS.Type.Machine, "cpu:", d.CPU.Mode)
	for _, disk := range d.Devices.Disks {
		fmt.Println("disk:", disk.Target.Dev, disk.Target.Bus, disk.Source.File.File)
	}
	for _, nic := range d.Devices.Interfaces {
		fmt.Println("nic:", nic.Alias.Name, nic.Model.Type)
	}
	// Output:
	// domain: qemu demo_cirros
	// memory: 134217728 b
	// vcpus: 4 enabled: 1 sockets: 4
	// machine: q35 cpu: host-model
	// disk: vda virtio /var/lib/vmi2libvirt/vmis/demo_cirros/disks/root.qcow2
	// nic: ua-default virtio-non-transitional
}
