//go:build cgo

package main

import (
	"fmt"
	"strings"
	"testing"

	v1 "kubevirt.io/api/core/v1"
)

// applyVMI is the test guest with sockets of maxSockets 4, and extra disks
// lines (indented 6) with their volumes (indented 2).
func applyVMI(name string, sockets, maxSockets int, disks, volumes string) string {
	devices := "    devices: {}\n"
	if disks != "" {
		devices = "    devices:\n      disks:\n" + disks
	}
	return fmt.Sprintf(`apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: %s, namespace: default}
spec:
  terminationGracePeriodSeconds: 5
  domain:
    cpu: {sockets: %d, cores: 1, threads: 1, maxSockets: %d}
    memory: {guest: 128Mi}
    firmware:
      kernelBoot:
        kernelArgs: console=ttyS0 quiet testguest.action=acpi
        container:
          image: localhost/vmi2libvirt/testguest:v1
          kernelPath: /boot/vmlinuz
          initrdPath: /boot/initrd.img
%s%s`, name, sockets, maxSockets, devices, volumes)
}

// TestApply runs the test guest, then applies changed files: a disk and a
// socket more are applied live (one line each, exit 0; status -o json
// shows the disk Ready in volumeStatus and 2 sockets in
// currentCPUTopology); the same file again is unchanged; a new maxSockets
// needs a restart (its path printed, exit 1, the guest untouched).
func TestApply(t *testing.T) {
	name, _, flags := guestVMI(t, "apply")
	dir := t.TempDir()
	base := writeFile(t, dir, "base.yaml", applyVMI(name, 1, 4, "", ""))
	expect(t, exitOK, "", append([]string{"run", "--emulate", base}, flags...)...)

	disk := "      - {name: extra, serial: extra, disk: {bus: virtio}}\n"
	vol := "  volumes:\n  - {name: extra, emptyDisk: {capacity: 16Mi}}\n"
	grown := writeFile(t, dir, "grown.yaml", applyVMI(name, 2, 4, disk, vol))
	r := expect(t, exitOK, "", append([]string{"apply", "--emulate", "-f", grown}, flags...)...)
	want := "applied attach-disk extra (spec.domain.devices.disks[0])\napplied set-vcpus 2 (spec.domain.cpu.sockets)\n"
	if r.stdout != want {
		t.Errorf("apply printed %q, want %q", r.stdout, want)
	}
	st := statusJSON(t, append([]string{name}, flags...)...)
	var ready bool
	for _, vs := range st.VolumeStatus {
		ready = ready || vs.Name == "extra" && vs.Phase == v1.VolumeReady && vs.HotplugVolume != nil && vs.Target == "vda"
	}
	if !ready || st.CurrentCPUTopology == nil || st.CurrentCPUTopology.Sockets != 2 {
		t.Errorf("status: volumeStatus %+v, currentCPUTopology %+v", st.VolumeStatus, st.CurrentCPUTopology)
	}
	r = expect(t, exitOK, "", append([]string{"apply", "--emulate", "-f", grown}, flags...)...)
	if r.stdout != "default/"+name+" unchanged\n" {
		t.Errorf("apply again printed %q", r.stdout)
	}

	restart := writeFile(t, dir, "restart.yaml", applyVMI(name, 2, 8, disk, vol))
	r = expect(t, exitInvalid, "", append([]string{"apply", "--emulate", "-f", restart}, flags...)...)
	if !strings.HasPrefix(r.stdout, "restart-required spec.domain.cpu.maxSockets: ") || !strings.Contains(r.stderr, "1 change(s) need a restart") {
		t.Errorf("apply of a new maxSockets printed %q, %q", r.stdout, r.stderr)
	}
	if again := statusJSON(t, append([]string{name}, flags...)...); again.CurrentCPUTopology == nil || again.CurrentCPUTopology.Sockets != 2 {
		t.Errorf("after the refusal: currentCPUTopology %+v", again.CurrentCPUTopology)
	}
}
