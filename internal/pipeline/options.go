package pipeline

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"sigs.k8s.io/yaml"

	"github.com/vmi2libvirt/vmi2libvirt/api"
	"github.com/vmi2libvirt/vmi2libvirt/convert"
)

// Host layout folders of a case with "layout: host", the same as
// examples/convert's defaults.
const (
	DefaultStateDir   = "/var/lib/vmi2libvirt/vmis"
	DefaultImageStore = "/var/lib/vmi2libvirt/images"
)

// caseOptions is the content of a test case's options file. Every field of
// convert.Options except Layout can be set under its own name (domainType,
// smbios, efi, cpuSet, memBalloonStatsPeriod, freePageReporting,
// bochsForEFIGuests, serialConsoleLog, noMemoryHotplug, hostDevices…).
type caseOptions struct {
	convert.Options
	// Layout is "kubevirt" (the default) or "host".
	Layout string `json:"layout"`
	// Host sets the fields of the HostLayout (stateDir, imageStore,
	// podNetwork, networks, claims, hostDiskAllow) when Layout is "host".
	Host *convert.HostLayout `json:"host"`
	// Cluster is the api.ClusterConfig passed to api.Default (zero value
	// when absent).
	Cluster api.ClusterConfig `json:"cluster"`
}

// ParseOptions reads the options file of a golden or catalogue case (YAML,
// see caseOptions). What it sets overrides convert.KubeVirtOptions() field
// by field and the rest keeps KubeVirt's value; an empty file gives
// KubeVirtOptions and the zero api.ClusterConfig. A host layout's StateDir
// and ImageStore default to DefaultStateDir and DefaultImageStore. Unknown
// keys are errors.
func ParseOptions(data []byte) (convert.Options, api.ClusterConfig, error) {
	o := caseOptions{Options: convert.KubeVirtOptions()}
	if err := yaml.UnmarshalStrict(data, &o); err != nil {
		return convert.Options{}, api.ClusterConfig{}, err
	}
	switch o.Layout {
	case "", "kubevirt":
		if o.Host != nil {
			return convert.Options{}, api.ClusterConfig{}, fmt.Errorf("host is set but layout is not host")
		}
		o.Options.Layout = convert.KubeVirtLayout{}
	case "host":
		h := convert.HostLayout{}
		if o.Host != nil {
			h = *o.Host
		}
		if h.StateDir == "" {
			h.StateDir = DefaultStateDir
		}
		if h.ImageStore == "" {
			h.ImageStore = DefaultImageStore
		}
		o.Options.Layout = h
	default:
		return convert.Options{}, api.ClusterConfig{}, fmt.Errorf("layout %q: want kubevirt or host", o.Layout)
	}
	return o.Options, o.Cluster, nil
}

// LoadOptions is ParseOptions on the file called file; a file that does not
// exist gives the defaults (a case without options). It is the one function
// of this package that reads a file.
func LoadOptions(file string) (convert.Options, api.ClusterConfig, error) {
	data, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return convert.Options{}, api.ClusterConfig{}, err
	}
	opts, cluster, err := ParseOptions(data)
	if err != nil {
		return convert.Options{}, api.ClusterConfig{}, fmt.Errorf("%s: %w", file, err)
	}
	return opts, cluster, nil
}
