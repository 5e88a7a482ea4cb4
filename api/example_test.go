package api_test

import (
	"errors"
	"fmt"

	"github.com/vmi2libvirt/vmi2libvirt/api"
)

func ExampleDecode() {
	vmi, err := api.Decode([]byte(`
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata:
  name: web
  namespace: shop
spec:
  runStrategy: Always
  template:
    metadata:
      labels: {app: web}
    spec:
      domain:
        devices: {}
        memory: {guest: 1Gi}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(vmi.Kind, vmi.Namespace+"/"+vmi.Name, vmi.Labels["app"], vmi.Spec.Domain.Memory.Guest)

	_, err = api.Decode([]byte(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: typo}
spec:
  domain:
    devices:
      disks:
      - name: root
        dsk: {bus: virtio}
`))
	fmt.Println(err)
	// Output:
	// VirtualMachineInstance shop/web web 1Gi
	// spec.domain.devices.disks[0].dsk: unknown field
}

func ExampleDefault() {
	vmi, _ := api.Decode([]byte(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: small}
spec:
  domain:
    devices:
      disks:
      - name: root
    resources:
      requests: {cpu: "2", memory: 2Gi}
  volumes:
  - name: root
    containerDisk: {image: quay.io/containerdisks/debian:12}
`))
	api.Default(vmi, api.ClusterConfig{}) // KubeVirt's default cluster configuration
	d := vmi.Spec.Domain
	fmt.Println("machine:", d.Machine.Type)
	fmt.Println("cpu:", d.CPU.Model, d.CPU.Sockets, "sockets, up to", d.CPU.MaxSockets)
	fmt.Println("memory:", d.Memory.Guest, "up to", d.Memory.MaxGuest)
	fmt.Println("disk bus:", d.Devices.Disks[0].Disk.Bus)
	fmt.Println("interface:", d.Devices.Interfaces[0].Name, "bridge:", d.Devices.Interfaces[0].Bridge != nil)
	fmt.Println("acpi:", *d.Features.ACPI.Enabled)
	fmt.Println("uuid:", d.Firmware.UUID)
	// Output:
	// machine: q35
	// cpu: host-model 2 sockets, up to 8
	// memory: 2Gi up to 8Gi
	// disk bus: sata
	// interface: default bridge: true
	// acpi: true
	// uuid: dcf065e4-d8a5-56c0-8e75-8250dfe68f94
}

func ExampleValidate() {
	vmi, _ := api.Decode([]byte(`
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: broken}
spec:
  domain:
    devices:
      disks:
      - name: root
        cdrom: {bus: virtio}
      interfaces:
      - name: default
        masquerade: {}
        macAddress: 02:00:00:00:00
    memory: {guest: 1Gi}
  networks:
  - name: default
    pod: {}
  volumes:
  - name: root
    containerDisk: {image: quay.io/containerdisks/debian:12}
`))
	api.Default(vmi, api.ClusterConfig{})
	for _, e := range api.Validate(vmi) {
		fmt.Println(e)
	}
	// Output:
	// spec.domain.devices.disks[0].cdrom.bus: Invalid value: "virtio": a CD-ROM cannot be on the virtio bus
	// spec.domain.devices.interfaces[0].macAddress: Invalid value: "02:00:00:00:00": not a MAC address such as 02:00:00:12:34:56
}

func ExampleDecodeDocument() {
	doc, err := api.DecodeDocument([]byte(`
apiVersion: kubevirt.io/v1
kind: VirtualMachine
metadata: {name: web}
spec:
  runStrategy: Always
  template:
    spec:
      domain:
        devices:
          disks:
          - name: root
            disk: {bus: ide}
        memory: {guest: 1Gi}
      volumes:
      - name: root
        containerDisk: {image: quay.io/containerdisks/debian:12}
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	api.Default(doc.VMI, api.ClusterConfig{})
	// Validate names the VMI's fields; the document shows them where the
	// user wrote them, in the VirtualMachine's template.
	err = doc.Invalid(api.StageValidate, api.Validate(doc.VMI))
	fmt.Println(doc.Kind, errors.Is(err, api.ErrInvalid))
	fmt.Println(err)
	// Output:
	// VirtualMachine true
	// spec.template.spec.domain.devices.disks[0].disk.bus: Unsupported value: "ide": supported values: "virtio", "scsi", "sata", "usb"
}
