// Package examples_test checks the sample VMIs under examples/vmis: each
// must decode, default, validate and convert with both layouts, and every
// domain must be canonical and pass libvirt's schema.
package examples_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
	"github.com/vmi2libvirt/vmi2libvirt/internal/pipeline"
	"github.com/vmi2libvirt/vmi2libvirt/testkit/golden"
)

// layouts are the two ways the samples are converted: KubeVirt's pod paths
// with virt-handler's options, and a plain libvirt host under emulation with
// the samples' Multus network mapped to a bridge and their claims mapped to
// files, without memory hotplug, as the launcher converts for Debian 12's
// libvirt 9.0 (which refuses to define <maxMemory slots="0">).
func layouts() []struct {
	name string
	opts convert.Options
} {
	host := convert.KubeVirtOptions()
	host.DomainType = "qemu"
	host.HostFacts.Lacks = []convert.Lack{convert.LackSlotlessMaxMemory}
	host.Layout = convert.HostLayout{
		StateDir:   "/var/lib/vmi2libvirt/vmis",
		ImageStore: "/var/lib/vmi2libvirt/images",
		// vmi-hostdisk.yaml's hostDisk lives here.
		HostDiskAllow: []string{"/var/data"},
		Networks: map[string]convert.InterfaceAttachment{
			"blue-net": {Type: "bridge", Source: "br-blue"},
		},
		Claims: map[string]convert.DiskSource{
			"database-root":  {Type: "file", Path: "/srv/claims/database-root.qcow2", Format: "qcow2"},
			"database-data":  {Type: "block", Path: "/dev/vg0/database-data", Format: "raw"},
			"win2k22-system": {Type: "file", Path: "/srv/claims/win2k22-system.img", Format: "raw"},
			"win2k22-iso":    {Type: "file", Path: "/srv/iso/windows-server-2022.iso", Format: "raw"},
		},
	}
	return []struct {
		name string
		opts convert.Options
	}{
		{"kubevirt", convert.KubeVirtOptions()},
		{"host", host},
	}
}

// TestSamples converts every sample with both layouts.
func TestSamples(t *testing.T) {
	files, err := filepath.Glob("vmis/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 12 {
		t.Errorf("want at least a dozen samples in examples/vmis, have %d", len(files))
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(filepath.Base(file), ".yaml")
		for _, l := range layouts() {
			opts := l.opts
			t.Run(name+"/"+l.name, func(t *testing.T) {
				res, err := pipeline.Convert(data, api.ClusterConfig{}, opts)
				if err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				again, err := pipeline.Convert(data, api.ClusterConfig{}, opts)
				if err != nil || !bytes.Equal(again.XML, res.XML) {
					t.Errorf("%s: a second conversion differs (err %v):\n%s", file, err, golden.LineDiff(string(res.XML), string(again.XML)))
				}
				golden.CheckRoundTrip(t, res.XML)
				golden.CheckSchemaBytes(t, name, res.XML)
			})
		}
	}
}
