package convert

import (
	"slices"
	"strings"
	"testing"

	v1 "kubevirt.io/api/core/v1"
	"libvirt.org/go/libvirtxml"
)

// TestRootComplexFull checks the end of the root bus: slots 2 to 0x1e less
// 0x1b make 28 free slots, as KubeVirt counts them (its placement skips 0, 1,
// 0x1b and 0x1f and stops at 0x20); the 29th device is refused.
func TestRootComplexFull(t *testing.T) {
	vmi := &v1.VirtualMachineInstance{}
	vmi.Annotations = map[string]string{v1.PlacePCIDevicesOnRootComplex: "true"}
	c := newConverter(vmi, Options{})
	for n, wantErr := range map[int]bool{28: false, 29: true} {
		d := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{Interfaces: make([]libvirtxml.DomainInterface, n)}}
		err := c.rootComplex(d)
		if (err != nil) != wantErr {
			t.Fatalf("%d devices: error %v, want error %v", n, err, wantErr)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "metadata.annotations[kubevirt.io/placePCIDevicesOnRootComplex]") {
				t.Errorf("error does not name the annotation: %v", err)
			}
			continue
		}
		if got := *d.Devices.Interfaces[n-1].Address.PCI.Slot; got != 0x1e {
			t.Errorf("last slot %#x, want 0x1e", got)
		}
		if got := *d.Devices.Interfaces[25].Address.PCI.Slot; got != 0x1c {
			t.Errorf("26th slot %#x, want 0x1c (0x1b skipped)", got)
		}
	}
}

// TestRootComplexSkipsExplicitSlots checks that devices placed on the root
// bus skip the slots that devices with an address of their own hold, so
// that libvirt never sees a slot used twice.
func TestRootComplexSkipsExplicitSlots(t *testing.T) {
	vmi := &v1.VirtualMachineInstance{}
	vmi.Annotations = map[string]string{v1.PlacePCIDevicesOnRootComplex: "true"}
	c := newConverter(vmi, Options{})
	d := &libvirtxml.Domain{Devices: &libvirtxml.DomainDeviceList{
		Interfaces: make([]libvirtxml.DomainInterface, 3),
		Disks:      []libvirtxml.DomainDisk{{Target: &libvirtxml.DomainDiskTarget{Bus: "virtio"}, Address: guestPCIAddress("0000:00:03.0")}},
	}}
	if err := c.rootComplex(d); err != nil {
		t.Fatal(err)
	}
	var got []uint
	for _, i := range d.Devices.Interfaces {
		got = append(got, *i.Address.PCI.Slot)
	}
	if want := []uint{2, 4, 5}; !slices.Equal(got, want) {
		t.Errorf("interfaces on slots %v, want %v (3 is the disk's)", got, want)
	}
	if s := *d.Devices.Disks[0].Address.PCI.Slot; s != 3 {
		t.Errorf("disk moved to slot %d", s)
	}
}
