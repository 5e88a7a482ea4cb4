package pipeline

import (
	"reflect"
	"testing"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// TestParseOptions checks how a case's options file is read: empty means
// KubeVirtOptions, a file overrides field by field, host layout defaults,
// cluster settings, and errors for unknown keys and layouts.
func TestParseOptions(t *testing.T) {
	t.Run("empty", func(t *testing.T) {
		opts, cfg, err := ParseOptions(nil)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(opts, convert.KubeVirtOptions()) || !reflect.DeepEqual(cfg, api.ClusterConfig{}) {
			t.Errorf("want KubeVirtOptions and the zero ClusterConfig, got %+v, %+v", opts, cfg)
		}
	})
	t.Run("overrides", func(t *testing.T) {
		opts, cfg, err := ParseOptions([]byte(`
layout: host
host:
  podNetwork: {type: user, backend: passt}
  networks:
    blue: {type: bridge, source: br-blue}
domainType: qemu
efi: {code: /x/CODE.fd}
cpuSet: [7]
noMemoryHotplug: true
hostDevices:
  gpu1: {pciAddress: "0000:81:00.0"}
cluster: {rolloutStrategy: Stage, cpuModel: Skylake}
`))
		if err != nil {
			t.Fatal(err)
		}
		want := convert.KubeVirtOptions()
		want.Layout = convert.HostLayout{
			StateDir:   DefaultStateDir,
			ImageStore: DefaultImageStore,
			PodNetwork: convert.InterfaceAttachment{Type: "user", Backend: "passt"},
			Networks:   map[string]convert.InterfaceAttachment{"blue": {Type: "bridge", Source: "br-blue"}},
		}
		want.DomainType = "qemu"
		want.EFI.Code = "/x/CODE.fd" // the other EFI paths stay KubeVirt's
		want.CPUSet = []uint{7}
		want.NoMemoryHotplug = true
		want.HostDevices = map[string]convert.HostDevice{"gpu1": {PCIAddress: "0000:81:00.0"}}
		if !reflect.DeepEqual(opts, want) {
			t.Errorf("got  %+v\nwant %+v", opts, want)
		}
		if cfg.RolloutStrategy != "Stage" || cfg.CPUModel != "Skylake" {
			t.Errorf("cluster not read: %+v", cfg)
		}
	})
	for name, content := range map[string]string{
		"unknown key":      "domaintyp: qemu\n",
		"unknown layout":   "layout: pod\n",
		"host without it":  "host: {stateDir: /x}\n",
		"wrong value type": "cpuSet: two\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := ParseOptions([]byte(content)); err == nil {
				t.Errorf("%q: want an error", content)
			}
		})
	}
}
