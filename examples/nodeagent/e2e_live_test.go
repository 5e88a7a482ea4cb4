package main

import (
	"context"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// TestE2ELiveChanges: a running VMI whose spec the API server changes
// gets the change live through the agent: a virtio emptyDisk added is
// Ready in status.volumeStatus (with hotplugVolume) and a socket more is
// in status.currentCPUTopology; a change of maxSockets is reported in the
// Synchronized condition with its field path, the guest left as it runs.
func TestE2ELiveChanges(t *testing.T) {
	w := newWorld(t)
	ns, node, dir := w.namespace(t, "live"), uniqueName("node"), stateDir(t)
	w.startNode(t, node, dir)
	vmi := bound(guestVMI(ns, "tiny", 5, testguest.ActionACPI), node)
	vmi.Spec.Domain.CPU = &virtv1.CPU{Sockets: 1, Cores: 1, Threads: 1, MaxSockets: 4}
	w.create(t, vmi)
	w.waitReady(t, ns, "tiny", 3*time.Minute)

	update := func(edit func(*virtv1.VirtualMachineInstance)) {
		t.Helper()
		for range 5 {
			cur := w.get(t, ns, "tiny")
			edit(cur)
			err := w.client.Update(context.Background(), cur)
			if err == nil {
				return
			}
			if !strings.Contains(err.Error(), "modified") {
				t.Fatalf("update: %v", err)
			}
		}
		t.Fatal("update: conflicts")
	}
	update(func(v *virtv1.VirtualMachineInstance) {
		v.Spec.Domain.CPU.Sockets = 2
		v.Spec.Domain.Devices.Disks = append(v.Spec.Domain.Devices.Disks, virtv1.Disk{Name: "extra", Serial: "extra",
			DiskDevice: virtv1.DiskDevice{Disk: &virtv1.DiskTarget{Bus: virtv1.DiskBusVirtio}}})
		v.Spec.Volumes = append(v.Spec.Volumes, virtv1.Volume{Name: "extra",
			VolumeSource: virtv1.VolumeSource{EmptyDisk: &virtv1.EmptyDiskSource{Capacity: resource.MustParse("16Mi")}}})
	})
	w.waitVMI(t, ns, "tiny", "the disk Ready and 2 sockets", time.Minute, func(v *virtv1.VirtualMachineInstance) bool {
		ready := false
		for _, vs := range v.Status.VolumeStatus {
			ready = ready || vs.Name == "extra" && vs.Phase == virtv1.VolumeReady && vs.HotplugVolume != nil
		}
		return ready && v.Status.CurrentCPUTopology != nil && v.Status.CurrentCPUTopology.Sockets == 2
	})

	update(func(v *virtv1.VirtualMachineInstance) { v.Spec.Domain.CPU.MaxSockets = 8 })
	got := w.waitVMI(t, ns, "tiny", "a Synchronized condition naming maxSockets", time.Minute, func(v *virtv1.VirtualMachineInstance) bool {
		c := condition(v, virtv1.VirtualMachineInstanceSynchronized)
		return c != nil && c.Status == k8sv1.ConditionFalse && strings.Contains(c.Message, "spec.domain.cpu.maxSockets")
	})
	if got.Status.Phase != virtv1.Running || got.Status.CurrentCPUTopology == nil || got.Status.CurrentCPUTopology.Sockets != 2 {
		t.Errorf("after the refused change: phase %s, currentCPUTopology %+v", got.Status.Phase, got.Status.CurrentCPUTopology)
	}
	if err := w.client.Delete(context.Background(), got); err != nil {
		t.Fatal(err)
	}
	w.waitGone(t, ns, "tiny", 2*time.Minute)
}
