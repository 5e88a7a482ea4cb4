package hostplan

import (
	"slices"
	"testing"
	"time"

	v1 "kubevirt.io/api/core/v1"

	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/domain"
)

// TestMakeHotpluggableAtStart: a hot-pluggable claim in the spec when the
// VMI starts (a VM's template that had one hot-added, started again) is a
// hotplug volume all the same: the plan's marks record it, and the status
// of its running domain reports it Ready with hotplugVolume, as KubeVirt
// does; a claim that is not hot-pluggable is not. (The soak found a VM
// restarted after a hot-add whose VMI had no volume status for it.)
func TestMakeHotpluggableAtStart(t *testing.T) {
	host := testHost()
	l := host.Options.Layout.(convert.HostLayout)
	l.Claims = map[string]convert.DiskSource{
		"hot":  {Type: "file", Path: "/srv/claims/hot.img", Format: "raw"},
		"cold": {Type: "file", Path: "/srv/claims/cold.img", Format: "raw"},
	}
	host.Options.Layout = l
	req, err := Prepare(decodeVMI(t, `
apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: web, namespace: shop}
spec:
  domain:
    resources: {requests: {memory: 128Mi}}
    devices:
      disks:
      - {name: cold, disk: {bus: virtio}}
      - {name: hot, serial: hot, disk: {bus: scsi}}
  volumes:
  - {name: cold, persistentVolumeClaim: {claimName: cold}}
  - {name: hot, persistentVolumeClaim: {claimName: hot, hotpluggable: true}}
`), host)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Make(req, host, webInputs())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(p.Marks.Hotplugged, []string{"hot"}) {
		t.Errorf("marks record the hotplug volumes %q, want [hot]", p.Marks.Hotplugged)
	}
	m, err := MarksOf(p.Domain)
	if err != nil || m == nil || !slices.Equal(m.Hotplugged, []string{"hot"}) {
		t.Fatalf("marks of the plan's domain: %+v, %v", m, err)
	}
	s := Snapshot{Obs: domain.Observation{Defined: true, State: domain.StateRunning, Started: true}, Domain: p.Domain, Marks: m}
	st := Status(s, v1.VirtualMachineInstanceStatus{}, v1.Running, nil, time.Now())
	if len(st.VolumeStatus) != 1 {
		t.Fatalf("volumeStatus %+v, want the hot-pluggable claim's alone", st.VolumeStatus)
	}
	if vs := st.VolumeStatus[0]; vs.Name != "hot" || vs.Phase != v1.VolumeReady || vs.HotplugVolume == nil || vs.Target != "sda" {
		t.Errorf("volume status %+v, want hot Ready on sda with hotplugVolume", vs)
	}
}
