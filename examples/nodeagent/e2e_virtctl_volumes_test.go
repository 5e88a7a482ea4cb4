package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	k8sv1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	virtv1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/testkit/hosttest"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/testguest"
)

// The claim the virtctl world's agent maps (-volume-claims), and its size.
const (
	volumeClaim     = "data"
	volumeClaimSize = 16 << 20
)

// volumeClaimFlags makes the raw file behind the claim volumeClaim of ns
// (removed at the end of the test) and returns the agent's flags that map
// it.
func volumeClaimFlags(t testing.TB, ns string) []string {
	t.Helper()
	file := filepath.Join(hosttest.Dir(t, stateRoot, "claims-"), volumeClaim+".img")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(file, volumeClaimSize); err != nil {
		t.Fatal(err)
	}
	return []string{"-volume-claims", ns + "/" + volumeClaim + "=" + file}
}

// The guest's disks, one line each, then an end mark that its echo does
// not contain.
const (
	listGuestDisks = testguest.ListDisksCommand + "; echo disks-$((1+1))-end"
)

var guestDisksAnswer = regexp.MustCompile(`(?s)\n((?:blk [a-z]+ serial=[^\n]*\n)*)[^\n]*disks-2-end`)

// testVirtctlVolumes: virtctl addvolume of a PersistentVolumeClaim (one
// the agent maps to a raw file of this host) to the running VMI tiny,
// which no VM owns: the subresource adds it to the VMI's spec,
// hot-pluggable, on virtctl's default bus (SCSI) with the claim's name as
// its serial; the agent attaches it live; status.volumeStatus says Ready
// with hotplugVolume; the guest lists the disk with its serial and size.
// virtctl removevolume takes it out of the spec, the status and the guest.
func testVirtctlVolumes(t *testing.T, w *virtctlWorld, ns string) {
	createClaim(t, w.world, ns)
	hotplugRoundTrip(t, w, ns, "tiny", func() {
		vmi := w.get(t, ns, "tiny")
		var disk *virtv1.Disk
		for i := range vmi.Spec.Domain.Devices.Disks {
			if d := &vmi.Spec.Domain.Devices.Disks[i]; d.Name == volumeClaim {
				disk = d
			}
		}
		var claim *virtv1.PersistentVolumeClaimVolumeSource
		for _, v := range vmi.Spec.Volumes {
			if v.Name == volumeClaim {
				claim = v.PersistentVolumeClaim
			}
		}
		if disk == nil || disk.Disk == nil || disk.Disk.Bus != virtv1.DiskBusSCSI || disk.Serial != volumeClaim ||
			claim == nil || claim.ClaimName != volumeClaim || !claim.Hotpluggable {
			t.Errorf("the VMI's spec after addvolume: disk %+v, claim %+v; want a SCSI disk with serial %s of the hot-pluggable claim", disk, claim, volumeClaim)
		}
	})
}

// createClaim creates the PersistentVolumeClaim volumeClaim in ns, as
// virtctl addvolume looks it up (nothing binds it: the agent maps it).
func createClaim(t testing.TB, w *world, ns string) {
	t.Helper()
	pvc := &k8sv1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: volumeClaim},
		Spec: k8sv1.PersistentVolumeClaimSpec{
			AccessModes: []k8sv1.PersistentVolumeAccessMode{k8sv1.ReadWriteOnce},
			Resources:   k8sv1.VolumeResourceRequirements{Requests: k8sv1.ResourceList{k8sv1.ResourceStorage: *resource.NewQuantity(volumeClaimSize, resource.BinarySI)}},
		},
	}
	if err := w.client.Create(context.Background(), pvc); err != nil {
		t.Fatal(err)
	}
}

// hotplugRoundTrip runs virtctl addvolume NAME of the claim volumeClaim
// (NAME a VM or a VMI, as virtctl finds it) and waits until the VMI's
// volumeStatus says Ready with hotplugVolume and the guest, asked on
// virtctl console, lists the disk with its serial and size; calls added;
// then runs virtctl removevolume and waits until the VMI has neither the
// volume nor its status and the guest lists no such disk. The VMI stays
// the same (no restart).
func hotplugRoundTrip(t *testing.T, w *virtctlWorld, ns, name string, added func()) {
	uid := w.get(t, ns, name).UID
	c := w.console(t, "", ns, name)
	c.connected(t, time.Minute)
	guestDisks := func(what string, ok func(string) bool) (string, time.Duration) {
		t.Helper()
		began := time.Now()
		for {
			disks := c.ask(t, listGuestDisks, guestDisksAnswer, time.Minute)
			if ok(disks) {
				return disks, time.Since(began)
			}
			if time.Since(began) > time.Minute {
				t.Fatalf("the guest does not list %s within a minute; it lists:\n%s", what, disks)
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	guestDisks("no disk "+volumeClaim, func(s string) bool { return !strings.Contains(s, "serial="+volumeClaim) })

	began := time.Now()
	if out := w.mustRun(t, "-n", ns, "addvolume", name, "--volume-name="+volumeClaim); !strings.Contains(out, "Successfully submitted add volume request to VM "+name+" for volume "+volumeClaim) {
		t.Errorf("virtctl addvolume printed %q", out)
	}
	w.waitVMI(t, ns, name, "volume "+volumeClaim+" Ready", 2*time.Minute, func(v *virtv1.VirtualMachineInstance) bool {
		vs := volumeStatus(v, volumeClaim)
		return vs != nil && vs.Phase == virtv1.VolumeReady && vs.HotplugVolume != nil
	})
	ready := time.Since(began)
	disks, after := guestDisks(fmt.Sprintf("the disk %s of %d bytes", volumeClaim, volumeClaimSize), func(s string) bool {
		return testguest.HasDisk(s, volumeClaim, volumeClaimSize)
	})
	t.Logf("virtctl addvolume %s: volumeStatus Ready after %s, the guest listed the disk %s later:\n%s", name, ready.Round(time.Millisecond), after.Round(time.Millisecond), disks)
	added()

	if out := w.mustRun(t, "-n", ns, "removevolume", name, "--volume-name="+volumeClaim); !strings.Contains(out, "Successfully submitted remove volume request to VM "+name+" for volume "+volumeClaim) {
		t.Errorf("virtctl removevolume printed %q", out)
	}
	w.waitVMI(t, ns, name, "without volume "+volumeClaim, 2*time.Minute, func(v *virtv1.VirtualMachineInstance) bool {
		return v != nil && volumeStatus(v, volumeClaim) == nil && !strings.Contains(fmt.Sprint(v.Spec.Volumes), volumeClaim)
	})
	guestDisks("no disk "+volumeClaim+" again", func(s string) bool { return !strings.Contains(s, "serial="+volumeClaim) })
	if now := w.get(t, ns, name); now == nil || now.UID != uid {
		t.Errorf("the VMI after addvolume and removevolume: %s, want the same (UID %s)", describe(now), uid)
	}
	c.leave(t)
}

// volumeStatus is the status of the VMI's volume called name; nil when
// the VMI or the entry is missing.
func volumeStatus(v *virtv1.VirtualMachineInstance, name string) *virtv1.VolumeStatus {
	if v == nil {
		return nil
	}
	for i := range v.Status.VolumeStatus {
		if v.Status.VolumeStatus[i].Name == name {
			return &v.Status.VolumeStatus[i]
		}
	}
	return nil
}
